//! `Registry`: the built-ins, policies a program adds, and "nothing is ignored" for all of them.

use policies::{ParamInfo, Params, PolicyInfo, PolicySpec, Registry, SpecError};
use sim::{ClusterView, Plan, Policy};

/// A policy that starts nothing: what these tests build is its name.
struct Named(String);

impl Policy for Named {
    fn name(&self) -> &str {
        &self.0
    }
    fn decide(&mut self, _: &ClusterView<'_>, _: &mut Plan<'_>) {}
}

/// Reads `every` (optional, default 2) and nothing else.
fn every(params: &Params) -> Result<Box<dyn Policy + Send>, SpecError> {
    let every: u32 = params.get_or("every", 2)?;
    Ok(Box::new(Named(format!("mine[every={every}]"))))
}

fn spec(text: &str) -> PolicySpec {
    text.parse().expect("valid spec")
}

fn build_error(registry: &Registry, text: &str) -> String {
    match registry.build(&spec(text)) {
        Ok(p) => panic!("`{text}` should not build, got `{}`", p.name()),
        Err(e) => e.to_string(),
    }
}

const BUILTINS: [&str; 12] = [
    "fifo",
    "sjf",
    "srtf",
    "easy-backfill",
    "slurm",
    "fair-share",
    "drf",
    "critical-path",
    "tiresias",
    "themis",
    "priority",
    "weighted-score",
];

#[test]
fn builtin_lists_the_twelve_policies_in_order_and_not_the_test_aids() {
    let registry = Registry::builtin();
    let names: Vec<&str> = registry.policies().map(|p| &*p.name).collect();
    assert_eq!(names, BUILTINS);
    assert!(registry.policies().all(PolicyInfo::declares_params));
    let idle = registry.build(&spec("fifo-idle[every=3]")).expect("the test aid builds");
    assert_eq!(idle.name(), "fifo-idle[every=3,skip=false,placement=pack,avoid_failed_h=0]");
}

#[test]
fn builtins_build_with_their_canonical_names() {
    let registry = Registry::builtin();
    let sjf = registry.build(&spec("sjf[placement=spread,duration=estimate]")).unwrap();
    assert_eq!(sjf.name(), "sjf[duration=estimate,placement=spread,avoid_failed_h=0]");
    assert_eq!(policies::build("fifo").unwrap().name(), "fifo[skip=false,placement=pack,avoid_failed_h=0]");
}

#[test]
fn every_declared_parameter_is_read() {
    // Giving every declared key its default must build: the constructor reads each of them,
    // so the unread-key check never refuses a key the catalogue lists.
    let registry = Registry::builtin();
    for info in registry.policies() {
        let mut full = PolicySpec::new(&info.name).unwrap();
        for p in info.params {
            full.set(p.key, p.default).unwrap();
        }
        let with_defaults = registry.build(&full).unwrap_or_else(|e| panic!("`{full}`: {e}"));
        let bare = registry.build(&PolicySpec::new(&info.name).unwrap()).unwrap();
        assert_eq!(with_defaults.name(), bare.name(), "{full}");
    }
}

#[test]
fn builtin_errors_list_what_is_valid() {
    let registry = Registry::builtin();
    let e = build_error(&registry, "fifio");
    assert!(e.starts_with("unknown policy `fifio`; valid policies: fifo, sjf, srtf,"), "{e}");
    assert!(e.ends_with("(test aids: fifo-idle)"), "{e}");
    let e = build_error(&registry, "sjf[depth=3]");
    assert_eq!(
        e,
        "policy `sjf` has no parameter `depth`; valid parameters: duration=oracle|estimate, \
         placement=pack|spread|fastest|local, avoid_failed_h=hours >= 0"
    );
    let e = build_error(&registry, "sjf[duration=psychic]");
    assert_eq!(e, "policy `sjf`: `duration=psychic`: expected oracle|estimate (valid: oracle|estimate)");
    // What a parameter takes, in its words, not the parser's ("provided string was not ...").
    assert_eq!(build_error(&registry, "fifo[skip=yes]"), "policy `fifo`: `skip=yes`: expected true|false");
    assert_eq!(registry.check(&spec("sjf[duration=psychic]")).unwrap_err().to_string(), e);
    assert_eq!(registry.check(&spec("sjf[duration=estimate]")), Ok(()));
}

#[test]
fn an_added_policy_gets_its_keys_and_refuses_the_rest() {
    let registry = Registry::builtin().with("mine", every);
    assert_eq!(registry.build(&spec("mine")).unwrap().name(), "mine[every=2]");
    assert_eq!(registry.build(&spec("mine[every=5]")).unwrap().name(), "mine[every=5]");
    assert_eq!(
        build_error(&registry, "mine[every=5,evry=3]"),
        "policy `mine` has no parameter `evry`; the parameters it reads: every"
    );
    assert_eq!(build_error(&registry, "mine[every=x]"), "policy `mine`: `every=x`: invalid digit found in string");
    assert!(registry.check(&spec("mine[evry=3]")).is_err());
    // Listed after the built-ins, without a declared list; the built-ins are unchanged.
    let last = registry.policies().last().unwrap();
    assert_eq!((&*last.name, last.declares_params(), last.params.len()), ("mine", false, 0));
    assert_eq!(registry.policies().count(), 13);
    assert_eq!(registry.build(&spec("fifo")).unwrap().name(), "fifo[skip=false,placement=pack,avoid_failed_h=0]");
}

#[test]
fn a_required_parameter_of_an_added_policy_is_asked_for() {
    let registry = Registry::builtin().with("needs-k", |p: &Params| {
        let k: u64 = p.get("k")?;
        Ok(Box::new(Named(format!("needs-k[k={k}]"))) as Box<dyn Policy + Send>)
    });
    assert_eq!(build_error(&registry, "needs-k"), "policy `needs-k` needs a value for `k`: `k=...`");
    assert_eq!(registry.build(&spec("needs-k[k=7]")).unwrap().name(), "needs-k[k=7]");
}

const LEVEL: ParamInfo = ParamInfo { key: "level", values: "0..9", default: "4", help: "how hard to try" };

#[test]
fn an_added_policy_with_declared_parameters_gets_their_defaults() {
    let info = PolicyInfo::new("leveled", "tries at a level", &[LEVEL], |p: &Params| {
        let level: u8 = p.get("level")?;
        Ok(Box::new(Named(format!("leveled[level={level}]"))) as Box<dyn Policy + Send>)
    });
    let registry = Registry::builtin().with_info(info);
    let listed = registry.policies().last().unwrap();
    assert_eq!((&*listed.name, &*listed.summary, listed.declares_params()), ("leveled", "tries at a level", true));
    assert_eq!(registry.build(&spec("leveled")).unwrap().name(), "leveled[level=4]");
    assert_eq!(
        build_error(&registry, "leveled[depth=1]"),
        "policy `leveled` has no parameter `depth`; valid parameters: level=0..9"
    );
}

#[test]
#[should_panic(expected = "a policy named `fifo` is already registered")]
fn adding_a_builtin_name_again_panics() {
    let _ = Registry::builtin().with("fifo", every);
}

#[test]
#[should_panic(expected = "a policy named `mine` is already registered")]
fn adding_a_name_twice_panics() {
    let _ = Registry::builtin().with("mine", every).with("mine", every);
}

#[test]
#[should_panic(expected = "`my policy` cannot be a policy name")]
fn a_name_no_spec_can_give_panics() {
    let _ = Registry::builtin().with("my policy", every);
}

#[test]
fn the_registry_is_shared_between_threads() {
    fn shareable<T: Clone + Send + Sync>(_: &T) {}
    let registry = Registry::builtin().with("mine", every);
    shareable(&registry);
    let clone = registry.clone();
    let name =
        std::thread::spawn(move || clone.build(&spec("mine[every=9]")).unwrap().name().to_string()).join().unwrap();
    assert_eq!(name, "mine[every=9]");
}

#[test]
fn an_added_policy_reads_the_kits_shared_parameters_with_their_defaults() {
    let registry = Registry::builtin().with("placed", |p: &Params| {
        let placer = policies::Placer::from_params(p)?;
        Ok(Box::new(Named(format!("placed[{placer}]"))) as Box<dyn Policy + Send>)
    });
    assert_eq!(registry.build(&spec("placed")).unwrap().name(), "placed[placement=pack,avoid_failed_h=0]");
    let spread = registry.build(&spec("placed[placement=spread,avoid_failed_h=2]")).unwrap();
    assert_eq!(spread.name(), "placed[placement=spread,avoid_failed_h=2]");
    assert_eq!(
        build_error(&registry, "placed[placement=tight]"),
        "policy `placed`: `placement=tight`: expected one of pack|spread|fastest|local (valid: pack|spread|fastest|local)"
    );
}
