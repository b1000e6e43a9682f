//! A sweep's `--grid`: each policy expanded over the keys it takes, and every combination of
//! the run settings a grid varies ([`crate::GRID_KEYS`]).

use crate::{GRID_KEYS, RunSpec};
use policies::{PolicySpec, Registry};

/// `KEY=V1|V2|...`.
fn parse_grid(text: &str) -> Result<(String, Vec<String>), String> {
    let bad = |why: &str| format!("--grid `{text}`: {why}; expected KEY=V1|V2|..., e.g. --grid placement=pack|spread");
    let (key, values) = text.split_once('=').ok_or_else(|| bad("no `=`"))?;
    let key = key.trim();
    if key.is_empty() {
        return Err(bad("no key"));
    }
    let values: Vec<String> = values.split('|').map(|v| v.trim().to_string()).collect();
    if let Some(v) = values.iter().find(|v| v.is_empty() || v.contains([',', '[', ']', '='])) {
        return Err(bad(&format!("bad value `{v}`")));
    }
    for (i, v) in values.iter().enumerate() {
        if values[..i].contains(v) {
            return Err(bad(&format!("`{v}` given twice")));
        }
    }
    Ok((key.to_string(), values))
}

/// The grid's key, as `--grid KEY=...` names it.
pub(super) fn grid_key(text: &str) -> &str {
    text.split('=').next().unwrap_or("").trim()
}

/// Each policy spec, expanded over every grid key it takes (first key outermost), each
/// expansion checked as `simulate --policy` would check it. A policy registered without a
/// parameter list takes no grid key (it cannot say which it reads).
pub(super) fn expand_policies(
    policies: &[String],
    grid: &[String],
    registry: &Registry,
) -> Result<Vec<PolicySpec>, String> {
    let grid: Vec<(String, Vec<String>)> = grid.iter().map(|g| parse_grid(g)).collect::<Result<_, _>>()?;
    for (i, (key, _)) in grid.iter().enumerate() {
        if grid[..i].iter().any(|(k, _)| k == key) {
            return Err(format!("--grid {key}: given twice; list every value in one --grid {key}=V1|V2|..."));
        }
    }
    let given: Vec<PolicySpec> = policies
        .iter()
        .map(|text| text.parse().map_err(|e| format!("--policy `{text}`: {e}")))
        .collect::<Result<_, _>>()?;
    let mut used = vec![false; grid.len()];
    let mut specs = Vec::new();
    for (text, spec) in policies.iter().zip(&given) {
        for spec in expand_one(text, spec, &grid, &mut used, registry)? {
            registry.check(&spec).map_err(|e| format!("--policy `{spec}`: {e}"))?;
            if specs.contains(&spec) {
                return Err(format!("--policy `{spec}` is in the sweep twice"));
            }
            specs.push(spec);
        }
    }
    if let Some(g) = used.iter().position(|u| !u) {
        let key = &grid[g].0;
        return Err(format!(
            "--grid {key}: no policy in the sweep takes `{key}` ({}), and it is no run setting a grid can vary ({})",
            keys_taken(registry, &given),
            GRID_KEYS.join(", ")
        ));
    }
    Ok(specs)
}

/// One policy spec (typed as `text`) over every grid key it takes; marks those keys `used`.
fn expand_one(
    text: &str,
    spec: &PolicySpec,
    grid: &[(String, Vec<String>)],
    used: &mut [bool],
    registry: &Registry,
) -> Result<Vec<PolicySpec>, String> {
    let mut expanded = vec![spec.clone()];
    for (g, (key, values)) in grid.iter().enumerate() {
        if !takes(registry, spec.name(), key) {
            continue;
        }
        if spec.param(key).is_some() {
            return Err(format!("--grid {key}: --policy `{text}` already sets `{key}`; give it in one place"));
        }
        used[g] = true;
        expanded = expanded
            .into_iter()
            .flat_map(|s| values.iter().map(move |v| s.clone().with(key, v)))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
    }
    Ok(expanded)
}

/// Whether the policy `name` declares the parameter `key`.
fn takes(registry: &Registry, name: &str, key: &str) -> bool {
    registry.get(name).is_some_and(|p| p.params.iter().any(|p| p.key == key))
}

/// `fifo takes skip, placement; ...`: the keys each policy of the sweep declares.
fn keys_taken(registry: &Registry, policies: &[PolicySpec]) -> String {
    let taken = policies.iter().map(|spec| {
        let name = spec.name();
        let keys: Vec<&str> = registry.get(name).map_or(Vec::new(), |p| p.params.iter().map(|k| k.key).collect());
        format!("{name} takes {}", if keys.is_empty() { "none".to_string() } else { keys.join(", ") })
    });
    taken.collect::<Vec<_>>().join("; ")
}

/// Every combination of the run-setting grid's values (first key outermost); one empty
/// combination without such keys.
pub(super) fn setting_combos(grid: &[String]) -> Result<Vec<Vec<(String, String)>>, String> {
    let mut combos = vec![Vec::new()];
    for (i, g) in grid.iter().enumerate() {
        let (key, values) = parse_grid(g)?;
        if grid[..i].iter().any(|earlier| grid_key(earlier) == key) {
            return Err(format!("--grid {key}: given twice; list every value in one --grid {key}=V1|V2|..."));
        }
        for v in &values {
            RunSpec::default().set(&key, v)?;
        }
        let mut next = Vec::with_capacity(combos.len() * values.len());
        for combo in &combos {
            for v in &values {
                next.push([combo.clone(), vec![(key.clone(), v.clone())]].concat());
            }
        }
        combos = next;
    }
    Ok(combos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_expands_the_policies_that_take_each_key() {
        let registry = Registry::builtin();
        let policies = ["fifo".to_string(), "sjf[duration=oracle]".to_string()];
        let grid = ["skip=true|false".to_string(), "placement=pack|spread".to_string()];
        let expanded: Vec<String> =
            expand_policies(&policies, &grid, &registry).unwrap().iter().map(|s| s.to_string()).collect();
        // First grid key outermost; each spec printed canonically (keys sorted).
        assert_eq!(
            expanded,
            [
                "fifo[placement=pack,skip=true]",
                "fifo[placement=spread,skip=true]",
                "fifo[placement=pack,skip=false]",
                "fifo[placement=spread,skip=false]",
                "sjf[duration=oracle,placement=pack]",
                "sjf[duration=oracle,placement=spread]",
            ]
        );
        let error = |grid: &str| expand_policies(&policies, &[grid.into()], &registry).unwrap_err();
        assert!(error("nosuch=1|2").contains("no policy in the sweep takes"));
        assert!(error("duration=oracle").contains("already sets"));
        assert!(error("skip=maybe").contains("fifo[skip=maybe]"));
    }

    #[test]
    fn run_settings_combine_first_key_outermost() {
        let grid = ["spare_nodes=0|1".to_string(), "max_retries=2|3".to_string()];
        let combos = setting_combos(&grid).unwrap();
        let pairs = |s: &str, m: &str| vec![("spare_nodes".into(), s.into()), ("max_retries".into(), m.into())];
        assert_eq!(combos, [pairs("0", "2"), pairs("0", "3"), pairs("1", "2"), pairs("1", "3")]);
        assert!(setting_combos(&["spare_nodes=x".into()]).unwrap_err().contains("not a whole number"));
    }
}
