//! Slurm's fair share: each user association's past usage, decayed with a half-life, against
//! its shares, as Fair Tree (22.05's default) or the classic formula computes it
//! (`src/plugins/priority/multifactor/fair_tree.c` and `priority_multifactor.c`).
//!
//! The tree is two levels under the root: accounts, and the users of each; the users of the
//! account `root` sit beside the accounts, as Slurm's `root` user does. Usage counts only
//! through the jobs a run sees (no usage from before the trace).
//!
//! Floats as Slurm's own (doubles), computed with IEEE operations only (no libm: `exp2` and
//! integer powers are written out here), so a run gives the same factors on every machine.

use std::collections::BTreeMap;

/// An account and a user: one user association.
pub type Assoc = (String, String);

/// Usage and shares of every association seen.
#[derive(Debug, Clone, Default)]
pub struct FairShare {
    /// Shares of accounts (`account` keys) and of user associations (`account.user` keys);
    /// 1 where not given, as sacctmgr's default.
    shares: BTreeMap<String, u32>,
    /// Raw usage of each user association (billing units x seconds, decayed).
    usage: BTreeMap<Assoc, f64>,
    fair_tree: bool,
}

impl FairShare {
    /// The associations named in `shares` (`account.user` keys) are known from the start.
    pub fn new(shares: BTreeMap<String, u32>, fair_tree: bool) -> FairShare {
        let usage = shares
            .keys()
            .filter_map(|k| k.split_once('.'))
            .map(|(a, u)| ((a.to_string(), u.to_string()), 0.0))
            .collect();
        FairShare { shares, usage, fair_tree }
    }

    /// Makes `assoc` known (a job of it arrived).
    pub fn know(&mut self, assoc: &Assoc) {
        if !self.usage.contains_key(assoc) {
            self.usage.insert(assoc.clone(), 0.0);
        }
    }

    /// Multiplies every usage by `factor` (the decay since the last calculation).
    pub fn decay(&mut self, factor: f64) {
        self.usage.values_mut().for_each(|u| *u *= factor);
    }

    pub fn add(&mut self, assoc: &Assoc, usage: f64) {
        *self.usage.entry(assoc.clone()).or_insert(0.0) += usage;
    }

    fn account_shares(&self, account: &str) -> f64 {
        f64::from(self.shares.get(account).copied().unwrap_or(1))
    }

    fn user_shares(&self, (account, user): &Assoc) -> f64 {
        f64::from(self.shares.get(&format!("{account}.{user}")).copied().unwrap_or(1))
    }

    /// The fair-share factor of every user association, in [0, 1].
    pub fn factors(&self) -> BTreeMap<Assoc, f64> {
        let tree = Tree::of(self);
        if self.fair_tree { tree.fair_tree() } else { tree.classic() }
    }
}

/// A child of the root: an account with its users, or a user of the root account.
#[derive(Debug, Clone)]
struct Child {
    shares: f64,
    usage: f64,
    /// `None`: a user of `root` (its association is the key).
    users: Option<Vec<(Assoc, f64, f64)>>,
    assoc: Option<Assoc>,
}

struct Tree {
    children: Vec<Child>,
    users: usize,
}

impl Tree {
    fn of(fs: &FairShare) -> Tree {
        let mut accounts: BTreeMap<&str, Vec<(Assoc, f64, f64)>> = BTreeMap::new();
        for key in fs.shares.keys().filter(|k| !k.contains('.') && k.as_str() != "root") {
            accounts.entry(key.as_str()).or_default();
        }
        let mut children = Vec::new();
        for (assoc, &usage) in &fs.usage {
            let entry = (assoc.clone(), fs.user_shares(assoc), usage);
            if assoc.0 == "root" {
                children.push(Child { shares: entry.1, usage, users: None, assoc: Some(assoc.clone()) });
            } else {
                accounts.entry(assoc.0.as_str()).or_default().push(entry);
            }
        }
        for (account, users) in accounts {
            let usage = users.iter().map(|u| u.2).sum();
            children.push(Child { shares: fs.account_shares(account), usage, users: Some(users), assoc: None });
        }
        Tree { users: fs.usage.len(), children }
    }

    /// Fair Tree: siblings ranked by level fair share S/U, depth first; a user's factor is
    /// its rank over the number of users, tied users sharing a rank.
    fn fair_tree(&self) -> BTreeMap<Assoc, f64> {
        let total_shares: f64 = self.children.iter().map(|c| c.shares).sum();
        let total_usage: f64 = self.children.iter().map(|c| c.usage).sum();
        let mut top: Vec<(f64, &Child)> =
            self.children.iter().map(|c| (level_fs(c.shares / total_shares, c.usage, total_usage), c)).collect();
        sort_by_level(&mut top, |c| c.users.is_none());
        let count = self.users as f64;
        let (mut rank, mut rnt) = (self.users, self.users);
        let mut factors = BTreeMap::new();
        let mut prev: Option<f64> = None;
        for (level, child) in top {
            let tied = prev == Some(level);
            prev = Some(level);
            match &child.users {
                None => {
                    if !tied {
                        rank = rnt;
                    }
                    factors.insert(child.assoc.clone().expect("a root user"), rank as f64 / count);
                    rnt = rnt.saturating_sub(1);
                }
                Some(users) => {
                    let shares: f64 = users.iter().map(|u| u.1).sum();
                    let mut ranked: Vec<(f64, &(Assoc, f64, f64))> =
                        users.iter().map(|u| (level_fs(u.1 / shares, u.2, child.usage), u)).collect();
                    sort_by_level(&mut ranked, |_| true);
                    let mut inner_prev: Option<f64> = None;
                    for (i, (level, user)) in ranked.into_iter().enumerate() {
                        let user_tied = if i == 0 { tied } else { inner_prev == Some(level) };
                        inner_prev = Some(level);
                        if !user_tied {
                            rank = rnt;
                        }
                        factors.insert(user.0.clone(), rank as f64 / count);
                        rnt = rnt.saturating_sub(1);
                    }
                }
            }
        }
        factors
    }

    /// Classic fair share: 2^(-effective usage / normalised shares).
    fn classic(&self) -> BTreeMap<Assoc, f64> {
        let total_shares: f64 = self.children.iter().map(|c| c.shares).sum();
        let root_usage: f64 = self.children.iter().map(|c| c.usage).sum();
        let norm = |usage: f64| if root_usage > 0.0 { usage / root_usage } else { 0.0 };
        let mut factors = BTreeMap::new();
        for child in &self.children {
            let share = child.shares / total_shares;
            // A child of the root: its effective usage is its normalised usage.
            let effective = norm(child.usage);
            match &child.users {
                None => {
                    factors.insert(child.assoc.clone().expect("a root user"), fs_factor(effective, share));
                }
                Some(users) => {
                    let level_shares: f64 = users.iter().map(|u| u.1).sum();
                    for (assoc, shares, usage) in users {
                        let own = norm(*usage);
                        let user_effective = if level_shares > 0.0 {
                            own + (effective - own) * (shares / level_shares)
                        } else {
                            effective
                        };
                        let user_share = if level_shares > 0.0 { share * shares / level_shares } else { 0.0 };
                        factors.insert(assoc.clone(), fs_factor(user_effective, user_share));
                    }
                }
            }
        }
        factors
    }
}

/// S / U, U the usage over the parent's: infinite for no usage, 0 for no shares.
fn level_fs(share: f64, usage: f64, parent_usage: f64) -> f64 {
    let used = if parent_usage > 0.0 { usage / parent_usage } else { 0.0 };
    if share == 0.0 {
        0.0
    } else if used == 0.0 {
        f64::INFINITY
    } else {
        share / used
    }
}

/// Highest level first; on a tie users before accounts; otherwise the order given (by name).
fn sort_by_level<T>(items: &mut [(f64, T)], is_user: impl Fn(&T) -> bool) {
    items.sort_by(|a, b| {
        b.0.partial_cmp(&a.0).unwrap_or(std::cmp::Ordering::Equal).then_with(|| is_user(&b.1).cmp(&is_user(&a.1)))
    });
}

/// `2^(-usage/shares)`; no shares: 0.
fn fs_factor(effective_usage: f64, shares_norm: f64) -> f64 {
    if shares_norm <= 0.0 { 0.0 } else { exp2(-(effective_usage / shares_norm)) }
}

/// 2^x with IEEE operations only: the integer part by repeated halving or doubling, the
/// fraction by its series (20 terms: exact to the last bits for x in [0, 1)).
pub fn exp2(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x < -1100.0 {
        return 0.0;
    }
    let whole = x.floor();
    let frac = x - whole;
    let t = frac * std::f64::consts::LN_2;
    let (mut sum, mut term) = (1.0, 1.0);
    for n in 1..=20 {
        term *= t / f64::from(n);
        sum += term;
    }
    sum * powi(2.0, whole as i64)
}

/// `base^n` by squaring: IEEE multiplications only.
pub fn powi(base: f64, n: i64) -> f64 {
    let (mut result, mut b, mut e) = (1.0, if n < 0 { 1.0 / base } else { base }, n.unsigned_abs());
    while e > 0 {
        if e & 1 == 1 {
            result *= b;
        }
        b *= b;
        e >>= 1;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assoc(a: &str, u: &str) -> Assoc {
        (a.to_string(), u.to_string())
    }

    #[test]
    fn exp2_and_powi_agree_with_the_exact_values() {
        assert_eq!(exp2(0.0), 1.0);
        assert_eq!(exp2(3.0), 8.0);
        assert_eq!(exp2(-2.0), 0.25);
        assert!((exp2(0.5) - std::f64::consts::SQRT_2).abs() < 1e-15);
        assert!((exp2(-1.5) - 0.5 / std::f64::consts::SQRT_2).abs() < 1e-15);
        assert_eq!(powi(0.5, 10), 1.0 / 1024.0);
        assert_eq!(powi(2.0, -3), 0.125);
    }

    /// Accounts a (shares 3) and b (1), users a.x and b.y. With no usage every level is
    /// infinite: all tied, every user gets rank 2 of 2 (factor 1). After a.x used 10 and b.y
    /// 10: a's S/U = 0.75/0.5 = 1.5 ranks above b's 0.25/0.5 = 0.5, so x gets 2/2 and y 1/2.
    #[test]
    fn fair_tree_ranks_accounts_by_share_over_usage_ties_sharing_a_rank() {
        let shares = BTreeMap::from([("a".to_string(), 3), ("b".to_string(), 1)]);
        let mut fs = FairShare::new(shares, true);
        fs.know(&assoc("a", "x"));
        fs.know(&assoc("b", "y"));
        let f = fs.factors();
        assert_eq!((f[&assoc("a", "x")], f[&assoc("b", "y")]), (1.0, 1.0));
        fs.add(&assoc("a", "x"), 10.0);
        fs.add(&assoc("b", "y"), 10.0);
        let f = fs.factors();
        assert_eq!((f[&assoc("a", "x")], f[&assoc("b", "y")]), (1.0, 0.5));
        // Decay keeps the ratios, so the ranks.
        fs.decay(0.5);
        assert_eq!(fs.factors()[&assoc("b", "y")], 0.5);
    }

    /// Users of one account: x used nothing (infinite level) ranks first; y and z used the
    /// same and tie at the next rank: 3/3, then 2/3 for both.
    #[test]
    fn fair_tree_ties_among_users_share_the_rank_below() {
        let mut fs = FairShare::new(BTreeMap::new(), true);
        for u in ["x", "y", "z"] {
            fs.know(&assoc("a", u));
        }
        fs.add(&assoc("a", "y"), 5.0);
        fs.add(&assoc("a", "z"), 5.0);
        let f = fs.factors();
        assert_eq!([f[&assoc("a", "x")], f[&assoc("a", "y")], f[&assoc("a", "z")]], [1.0, 2.0 / 3.0, 2.0 / 3.0]);
    }

    /// Classic: accounts a (1) and b (1), one user each. a.x used 3, b.y 1: a's normalised
    /// usage 0.75, its share 0.5, so x's factor is 2^(-0.75/0.5) = 2^-1.5; y's 2^(-0.25/0.5).
    #[test]
    fn classic_fair_share_is_two_to_the_minus_usage_over_shares() {
        let mut fs = FairShare::new(BTreeMap::new(), false);
        fs.add(&assoc("a", "x"), 3.0);
        fs.add(&assoc("b", "y"), 1.0);
        let f = fs.factors();
        assert!((f[&assoc("a", "x")] - exp2(-1.5)).abs() < 1e-15);
        assert!((f[&assoc("b", "y")] - exp2(-0.5)).abs() < 1e-15);
    }
}
