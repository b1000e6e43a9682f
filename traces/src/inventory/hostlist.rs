//! Slurm's host list expressions, as `NodeList` (sacct), `NodeName=` and `Nodes=` (slurm.conf)
//! write them: names separated by commas, each with at most one bracketed range list, such
//! as `n[1-4,7]`, `gpu-[01-03]-ib` or `a1,b[2-3]`. Zero-padded ranges keep their width
//! (`[08-10]` is `08`, `09`, `10`), as Slurm does.

/// The host names of `text`, in order; `Err` says what is malformed.
pub fn expand_hostlist(text: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    for item in split_top_level(text)? {
        match item.split_once('[') {
            None if !item.is_empty() => names.push(item.to_owned()),
            None => return Err("an empty host name (two commas in a row?)".to_owned()),
            Some((prefix, rest)) => {
                let (ranges, suffix) = rest.split_once(']').ok_or("a `[` without its `]`")?;
                if suffix.contains('[') {
                    return Err(format!("`{item}`: only one bracketed range per name is supported"));
                }
                for range in ranges.split(',') {
                    for number in expand_range(range)? {
                        names.push(format!("{prefix}{number}{suffix}"));
                    }
                }
            }
        }
    }
    Ok(names)
}

/// The items of a host list, split at the commas outside brackets.
fn split_top_level(text: &str) -> Result<Vec<&str>, String> {
    let mut items = Vec::new();
    let (mut depth, mut from) = (0u32, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '[' if depth == 0 => depth = 1,
            '[' => return Err("a `[` inside brackets".to_owned()),
            ']' if depth == 1 => depth = 0,
            ']' => return Err("a `]` without its `[`".to_owned()),
            ',' if depth == 0 => {
                items.push(&text[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err("a `[` without its `]`".to_owned());
    }
    items.push(&text[from..]);
    Ok(items)
}

/// `7` or `01-03` as the numbers it names, each as wide as its lower bound is written.
fn expand_range(range: &str) -> Result<Vec<String>, String> {
    let bad = || format!("`{range}`: expected a number or a range LOW-HIGH inside the brackets");
    let digits = |s: &str| !s.is_empty() && s.len() <= 9 && s.bytes().all(|b| b.is_ascii_digit());
    let (low, high) = range.split_once('-').unwrap_or((range, range));
    if !digits(low) || !digits(high) {
        return Err(bad());
    }
    let (from, to): (u32, u32) = (low.parse().map_err(|_| bad())?, high.parse().map_err(|_| bad())?);
    if from > to {
        return Err(format!("`{range}`: the range runs backwards"));
    }
    if to - from >= 100_000 {
        return Err(format!("`{range}`: more than 100000 hosts in one range"));
    }
    let width = low.len();
    Ok((from..=to).map(|n| format!("{n:0width$}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_lists_expand_as_slurm_writes_them() {
        assert_eq!(expand_hostlist("n2").unwrap(), ["n2"]);
        assert_eq!(expand_hostlist("n[1-3,7]").unwrap(), ["n1", "n2", "n3", "n7"]);
        assert_eq!(expand_hostlist("gpu-[08-10]-ib").unwrap(), ["gpu-08-ib", "gpu-09-ib", "gpu-10-ib"]);
        assert_eq!(expand_hostlist("a1,b[2-3],c").unwrap(), ["a1", "b2", "b3", "c"]);
        for bad in ["n[1-", "n[3-1]", "n[x]", "n1,,n2", "n[1]x[2]", "n]1", "n[[1]]", "n[1-200000]"] {
            assert!(expand_hostlist(bad).is_err(), "{bad}");
        }
    }
}
