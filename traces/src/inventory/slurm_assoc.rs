//! Slurm's associations: `sacctmgr show assoc --parsable2`, a `|`-separated header then one
//! association per line, for the `slurm` policy's `shares` ([`super::slurm_sched`]).
//!
//! Columns read, by name: `Account`, `User`, `Share` (the raw `Fairshare`), and where present
//! `Cluster`, `Partition` and `ParentName`. A row without a user is an account (`alpha`), one
//! with a user that user's association in the account (`alpha.ann`); the `root` account itself
//! is the tree's root and is skipped. What the shares cannot say is named in a note:
//! `Fairshare=parent` and other shares that are not numbers (skipped), per-partition
//! associations (the first one of a user is taken), an account below another account (the
//! spec's accounts hang from `root`; without a `ParentName` column this cannot be checked),
//! names the spec cannot write, rows of a second cluster, and association limits and
//! priorities (`Grp*`, `Max*`, `Priority` columns with values).

use crate::error::TraceError;
use crate::sacct::table::{Row, Table};

/// The shares of an association list, and what they leave out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssocShares {
    /// `account` or `account.user`, and its raw share, in file order.
    pub shares: Vec<(String, u32)>,
    pub notes: Vec<String>,
}

const FIELDS: &[(&str, bool)] = &[
    ("Account", true),
    ("User", true),
    ("Share", true),
    ("Cluster", false),
    ("Partition", false),
    ("ParentName", false),
];

/// Reads `sacctmgr show assoc --parsable2` output; `file` names it in errors.
pub fn read_sacctmgr_assoc(text: &str, file: &str) -> Result<AssocShares, TraceError> {
    let table = Table::split(text, file).map_err(|mut errors| errors.remove(0))?;
    let cols = table.columns(file, FIELDS, "sacctmgr show assoc format=")?;
    let (account_col, user_col, share_col, cluster_col, partition_col, parent_col) =
        (cols[0], cols[1], cols[2], cols[3], cols[4], cols[5]);
    let limit_cols: Vec<usize> = (0..table.header.len())
        .filter(|&c| {
            let name = table.header[c];
            name.starts_with("Grp") || name.starts_with("Max") || name == "Priority"
        })
        .collect();
    let mut shares: Vec<(String, u32)> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let mut cluster: Option<&str> = None;
    let mut other_clusters: Vec<&str> = Vec::new();
    let mut limited: Vec<&str> = Vec::new();
    let mut limited_rows = 0usize;
    for (line, fields) in &table.rows {
        let row = Row { file, line: *line, header: &table.header, fields };
        let account = row.get(account_col);
        if account.is_empty() {
            return Err(row.error(account_col, "an account name"));
        }
        let here = row.get(cluster_col);
        match cluster {
            None => cluster = Some(here),
            Some(first) if first != here => {
                if !other_clusters.contains(&here) {
                    other_clusters.push(here);
                }
                continue;
            }
            Some(_) => {}
        }
        let user = row.get(user_col);
        if account == "root" && user.is_empty() {
            continue;
        }
        let key = if user.is_empty() { account.to_owned() } else { format!("{account}.{user}") };
        let used: Vec<usize> = limit_cols.iter().copied().filter(|&c| !row.get(Some(c)).is_empty()).collect();
        if !used.is_empty() {
            limited_rows += 1;
            for c in used {
                if !limited.contains(&table.header[c]) {
                    limited.push(table.header[c]);
                }
            }
        }
        let bad =
            |name: &str| name.contains(['.', ':', '/', ',', '[', ']', '=', ';']) || name.contains(char::is_whitespace);
        if bad(account) || bad(user) {
            notes.push(format!("{file}:{line}: association {key}: its name cannot be written in shares; skipped"));
            continue;
        }
        let partition = row.get(partition_col);
        if !partition.is_empty() {
            notes.push(format!(
                "{file}:{line}: association {key} of partition {partition}: per-partition associations are not modelled"
            ));
        }
        if user.is_empty() {
            let parent = row.get(parent_col);
            if !parent.is_empty() && parent != "root" {
                notes.push(format!(
                    "account {account} is under account {parent}: the spec's accounts all hang from root"
                ));
            }
        }
        let share_text = row.get(share_col);
        let Ok(share) = share_text.parse::<u32>() else {
            let what = if share_text == "parent" { "Fairshare=parent (its parent's share)" } else { "a share" };
            notes.push(format!("{file}:{line}: association {key} has {what} `{share_text}`: not modelled, skipped"));
            continue;
        };
        if shares.iter().any(|(k, _)| *k == key) {
            notes.push(format!("{file}:{line}: association {key} again: its first share is taken"));
            continue;
        }
        shares.push((key, share));
    }
    if parent_col.is_none() {
        notes.push(format!(
            "{file} has no ParentName column: every account is taken to be root's child (sacctmgr show assoc \
             format=...,ParentName shows the tree)"
        ));
    }
    if !other_clusters.is_empty() {
        notes.push(format!(
            "{file} has associations of cluster {} too: only {}'s (the first row's) are read",
            other_clusters.join(", "),
            cluster.unwrap_or("")
        ));
    }
    if !limited.is_empty() {
        notes.push(format!(
            "{limited_rows} association{} set {}: association limits and priorities are not modelled",
            if limited_rows == 1 { "" } else { "s" },
            limited.join(", ")
        ));
    }
    Ok(AssocShares { shares, notes })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "Cluster|Account|User|Partition|Share|Priority|GrpJobs|MaxWall|QOS\n";

    fn read(rows: &str) -> AssocShares {
        read_sacctmgr_assoc(&format!("{HEADER}{rows}"), "assoc.txt").unwrap()
    }

    #[test]
    fn accounts_and_users_with_their_shares() {
        let a = read(
            "c|root|||1||||normal\nc|root|root||1||||normal\nc|alpha|||50||||normal\nc|alpha|ann||3||||normal\n\
             c|beta|||30||||normal\n",
        );
        let expected = [("root.root", 1), ("alpha", 50), ("alpha.ann", 3), ("beta", 30)];
        assert_eq!(a.shares, expected.map(|(k, n)| (k.to_owned(), n)));
        assert_eq!(
            a.notes,
            ["assoc.txt has no ParentName column: every account is taken to be root's child (sacctmgr show assoc \
              format=...,ParentName shows the tree)"]
        );
    }

    #[test]
    fn what_shares_cannot_say_is_named() {
        let a = read(
            "c|alpha|||parent||||\nc|alpha|al||x||||\nc|alpha|ann|gpu|2||||\nc|alpha|ann||5||||\nc|a.b|||1||||\n\
             c|beta|bo||1|10|4||\nc|beta|ben||1|||1:00:00|\nd|gamma|||1||||\n",
        );
        assert_eq!(a.shares, [("alpha.ann".to_owned(), 2), ("beta.bo".to_owned(), 1), ("beta.ben".to_owned(), 1)]);
        assert_eq!(
            a.notes,
            [
                "assoc.txt:2: association alpha has Fairshare=parent (its parent's share) `parent`: not modelled, \
                 skipped",
                "assoc.txt:3: association alpha.al has a share `x`: not modelled, skipped",
                "assoc.txt:4: association alpha.ann of partition gpu: per-partition associations are not modelled",
                "assoc.txt:5: association alpha.ann again: its first share is taken",
                "assoc.txt:6: association a.b: its name cannot be written in shares; skipped",
                "assoc.txt has no ParentName column: every account is taken to be root's child (sacctmgr show assoc \
                 format=...,ParentName shows the tree)",
                "assoc.txt has associations of cluster d too: only c's (the first row's) are read",
                "2 associations set Priority, GrpJobs, MaxWall: association limits and priorities are not modelled",
            ]
        );
        let nested = read_sacctmgr_assoc(
            "Account|User|Share|ParentName\nroot||1|\nml||10|root\ncv||5|ml\ncv|u|1|\n",
            "assoc.txt",
        )
        .unwrap();
        assert_eq!(nested.notes, ["account cv is under account ml: the spec's accounts all hang from root"]);
        assert_eq!(nested.shares.len(), 3);
    }

    #[test]
    fn malformed_lists_are_errors() {
        let e = |t: &str| read_sacctmgr_assoc(t, "assoc.txt").unwrap_err().to_string();
        assert!(
            e("Account|User\nx|y\n").starts_with("assoc.txt:1: the header has no field `Share`"),
            "{}",
            e("Account|User\n")
        );
        assert_eq!(e("Account|User|Share\n|u|1\n"), "assoc.txt:2: field `Account`: expected an account name, got \"\"");
        assert!(e("Account|User|Share\na|1\n").starts_with("assoc.txt:2: expected 3 `|`-separated fields"));
    }
}
