//! The seeded synthetic workload: what `schedlab simulate` runs when given no trace, and a
//! knob-by-knob workload for experiments. Shaped after Philly: Poisson arrivals, heavy-tailed
//! (lognormal, sigma 1.8, capped at 2 days) durations with a 20 minute median, GPU counts
//! mostly 1, and a noisy per-task estimate so that estimate-based policies are tested honestly.
//!
//! Floats are sampled from the "synth" stream and converted to integer milliseconds once,
//! here; nothing downstream sees a float. (rand_distr's lognormal uses `exp`, whose last bit
//! may differ between libms; rounding to the millisecond hides that in all but freak cases.)

use crate::error::TraceError;
use crate::names::numbered;
use crate::timeparse::MAX_SECONDS;
use rand::RngExt;
use rand_distr::{Distribution, Exp, LogNormal, StandardNormal};
use sim::{JobSpec, SimDuration, SimTime, Workload};

/// GPUs per job and their weights, after Philly (where 93 % of jobs use one GPU).
pub const PHILLY_GPU_MIX: [(u32, f64); 6] = [(1, 0.80), (2, 0.05), (4, 0.06), (8, 0.06), (16, 0.02), (32, 0.01)];

/// The most jobs one generation held in memory may ask for (about 440 bytes a job): a guard
/// against typos and running out of memory, not a model limit.
pub const MAX_SYNTH_JOBS: usize = 10_000_000;
/// The most jobs drawn one at a time may number (a streamed run holds the jobs in the system,
/// not the workload): a guard against typos.
pub const MAX_DRAWN_SYNTH_JOBS: usize = 1_000_000_000;

#[derive(Debug, Clone, PartialEq)]
pub struct SynthConfig {
    pub jobs: usize,
    /// Mean arrivals per hour of a Poisson process (exponential gaps).
    pub arrival_rate_per_hour: f64,
    /// Median job duration; the duration is lognormal around it.
    pub duration_median_s: f64,
    /// Lognormal shape: 1.8 puts p99 near 65 x the median, like Philly's tail.
    pub duration_sigma: f64,
    /// Longer draws are cut to this. The default, 2 days, is a common cluster walltime limit
    /// and close to Philly's p99 (2.9 days); it keeps a 2,000-job run from idling for a week
    /// behind one straggler (with a 14-day cap, seed 0 draws a 14-day job and the default
    /// run's window is 17 days for 3 days of arrivals). Raise it for tail studies.
    pub duration_cap_s: f64,
    /// `(GPUs, weight)`; weights need not sum to 1.
    pub gpu_mix: Vec<(u32, f64)>,
    /// Estimate = true duration x lognormal(median 1, this sigma); `None`: no estimates.
    pub estimate_sigma: Option<f64>,
    pub seed: u64,
}

impl Default for SynthConfig {
    /// The built-in default run: 2,000 jobs at 80 % offered load on 16 x 8 GPUs
    /// (about 3 days of arrivals, makespan set by the tail).
    fn default() -> SynthConfig {
        SynthConfig::for_cluster(128, 0.8)
    }
}

impl SynthConfig {
    /// A Philly-like workload of 2,000 jobs whose arrival rate offers `load` x the capacity
    /// of a cluster of `total_gpus` GPUs (0.8: busy, queues form, but it drains). Job sizes
    /// larger than the cluster are left out of the mix, so every job can run.
    pub fn for_cluster(total_gpus: u32, load: f64) -> SynthConfig {
        let mut config = SynthConfig {
            jobs: 2_000,
            arrival_rate_per_hour: 1.0,
            duration_median_s: 1_200.0,
            duration_sigma: 1.8,
            duration_cap_s: 2.0 * 86_400.0,
            gpu_mix: PHILLY_GPU_MIX.iter().copied().filter(|&(g, _)| g <= total_gpus.max(1)).collect(),
            estimate_sigma: Some(0.5),
            seed: 0,
        };
        let per_job = config.mean_gpu_seconds_per_job();
        config.arrival_rate_per_hour = load * f64::from(total_gpus) * 3600.0 / per_job;
        config
    }

    /// [`SynthConfig::for_cluster`] with the job count and seed set: `jobs` jobs offering
    /// `load` x the capacity of `total_gpus` GPUs.
    pub fn for_load(jobs: usize, total_gpus: u32, load: f64, seed: u64) -> SynthConfig {
        SynthConfig { jobs, seed, ..SynthConfig::for_cluster(total_gpus, load) }
    }

    /// Expected GPU-seconds of one job: `E[GPUs] x E[min(duration, cap)]` (they are drawn
    /// independently; the 1 s floor and ms rounding are ignored as negligible).
    pub fn mean_gpu_seconds_per_job(&self) -> f64 {
        let total: f64 = self.gpu_mix.iter().map(|m| m.1).sum();
        let mean_gpus = self.gpu_mix.iter().map(|&(g, w)| f64::from(g) * w).sum::<f64>() / total;
        mean_gpus * capped_lognormal_mean(self.duration_median_s.ln(), self.duration_sigma, self.duration_cap_s)
    }

    /// Offered load on `total_gpus` GPUs: arriving GPU-seconds per second over capacity.
    pub fn offered_load(&self, total_gpus: u32) -> f64 {
        self.arrival_rate_per_hour / 3600.0 * self.mean_gpu_seconds_per_job() / f64::from(total_gpus)
    }

    fn check(&self) -> Result<(), TraceError> {
        let bad = |message: String| Err(TraceError::value("synthetic workload settings", message));
        let positive = |x: f64| x.is_finite() && x > 0.0;
        if self.jobs == 0 || self.jobs > MAX_DRAWN_SYNTH_JOBS {
            return bad(format!("jobs must be 1..={MAX_DRAWN_SYNTH_JOBS}, got {}", self.jobs));
        }
        if !positive(self.arrival_rate_per_hour) {
            return bad(format!("arrival rate must be a positive number per hour, got {}", self.arrival_rate_per_hour));
        }
        let sigma_ok = self.duration_sigma.is_finite() && self.duration_sigma >= 0.0;
        if !positive(self.duration_median_s) || !sigma_ok {
            return bad("duration median must be positive and sigma non-negative".into());
        }
        if !(self.duration_cap_s >= 1.0 && self.duration_cap_s <= MAX_SECONDS as f64) {
            return bad(format!("duration cap must be 1..={MAX_SECONDS} seconds, got {}", self.duration_cap_s));
        }
        if self.estimate_sigma.is_some_and(|s| !(s.is_finite() && s >= 0.0)) {
            return bad("estimate sigma must be non-negative".into());
        }
        let weights_ok = self.gpu_mix.iter().all(|&(g, w)| g >= 1 && w.is_finite() && w >= 0.0);
        if !weights_ok || !positive(self.gpu_mix.iter().map(|m| m.1).sum()) {
            return bad("the GPU mix needs entries with at least 1 GPU, weights >= 0, and some weight > 0".into());
        }
        Ok(())
    }

    /// Draws the workload. Same settings and seed give the identical workload on every run.
    pub fn generate(&self) -> Result<Workload, TraceError> {
        if self.jobs > MAX_SYNTH_JOBS {
            let message = format!(
                "jobs must be 1..={MAX_SYNTH_JOBS} for a workload held in memory, got {} \
                 (drawn one at a time, as `simulate --stream` does, up to {MAX_DRAWN_SYNTH_JOBS})",
                self.jobs
            );
            return Err(TraceError::value("synthetic workload settings", message));
        }
        let mut jobs = Vec::with_capacity(self.jobs);
        for job in self.jobs()? {
            jobs.push(job?);
        }
        Workload::new(jobs).map_err(|e| TraceError::value("synthetic workload", e.0))
    }

    /// The workload's jobs drawn one at a time, in submission order, holding nothing of those
    /// drawn (a streamed run's): the same jobs as [`SynthConfig::generate`]'s.
    pub fn jobs(&self) -> Result<SynthJobs, TraceError> {
        self.check()?;
        let too_much = |e: &dyn std::fmt::Display| TraceError::value("synthetic workload settings", e.to_string());
        Ok(SynthJobs {
            rng: sim::rng::stream(self.seed, "synth"),
            gaps: Exp::new(self.arrival_rate_per_hour / 3600.0).map_err(|e| too_much(&e))?,
            durations: LogNormal::new(self.duration_median_s.ln(), self.duration_sigma).map_err(|e| too_much(&e))?,
            noise: LogNormal::new(0.0, self.estimate_sigma.unwrap_or(0.0)).map_err(|e| too_much(&e))?,
            total_weight: self.gpu_mix.iter().map(|m| m.1).sum(),
            config: self.clone(),
            index: 0,
            submit_ms: 0,
        })
    }
}

/// The synthetic workload's jobs, drawn as they are asked for (see [`SynthConfig::jobs`]).
pub struct SynthJobs {
    config: SynthConfig,
    rng: sim::rng::StreamRng,
    gaps: Exp<f64>,
    durations: LogNormal<f64>,
    noise: LogNormal<f64>,
    total_weight: f64,
    index: usize,
    submit_ms: u64,
}

/// One job's draws, before it is built (see [`SynthJobs::survey`]). The two log-normal draws
/// are kept as the standard normal values they are made from: the survey builds few jobs,
/// and the two `exp` of every job were a fifth of its time.
struct Draw {
    index: usize,
    submit_ms: u64,
    gpus: u32,
    /// The duration's draw, as a z-score of `durations`.
    duration_z: f64,
    /// The estimate's factor of the true duration, as a z-score of `noise` (drawn whether or
    /// not estimates are kept).
    factor_z: f64,
}

impl SynthJobs {
    /// The next job's draws, or the error that ends the workload.
    fn draw(&mut self) -> Option<Result<Draw, TraceError>> {
        if self.index == self.config.jobs {
            return None;
        }
        let index = self.index;
        self.index += 1;
        // Same draws in the same order for every job, whether or not estimates are kept,
        // so switching estimates off changes nothing else.
        let rng = &mut self.rng;
        // A log-normal sample is its z-score's `from_zscore` (rand_distr's own `sample`).
        let gap_s: f64 = self.gaps.sample(rng);
        let duration_z: f64 = rng.sample(StandardNormal);
        let pick: f64 = rng.random::<f64>() * self.total_weight;
        let factor_z: f64 = rng.sample(StandardNormal);
        self.submit_ms = self.submit_ms.saturating_add(to_ms(gap_s));
        if self.submit_ms > MAX_SECONDS * 1000 {
            self.index = self.config.jobs; // nothing after the error
            return Some(Err(TraceError::value(
                "synthetic workload settings",
                format!("arrivals run past {MAX_SECONDS} s; raise the arrival rate or lower the job count"),
            )));
        }
        let gpus = choose(&self.config.gpu_mix, pick);
        Some(Ok(Draw { index, submit_ms: self.submit_ms, gpus, duration_z, factor_z }))
    }

    fn build(&self, draw: &Draw) -> JobSpec {
        let name = numbered("synth-", draw.index as u64);
        let duration_s = self.durations.from_zscore(draw.duration_z);
        let work_ms = to_ms(duration_s.min(self.config.duration_cap_s)).max(1_000);
        let mut job = JobSpec::single(name, SimTime(draw.submit_ms), draw.gpus, SimDuration(work_ms));
        if self.config.estimate_sigma.is_some() {
            let factor = self.noise.from_zscore(draw.factor_z);
            let estimate_ms = to_ms(work_ms as f64 / 1000.0 * factor).clamp(1_000, MAX_SECONDS * 1000);
            job.tasks[0].estimate = SimDuration(estimate_ms).into();
        }
        job
    }

    /// What a run must know of the rest of the workload before it starts, learnt by drawing
    /// it as [`Iterator::next`] does without building a job (a third of the cost of a job
    /// drawn whole and handed on): the span of submissions, and the kinds of job. Synthetic
    /// jobs differ only in their times and GPU counts, so each kind is the first job drawn of
    /// its GPU count, with how many jobs are like it, in the order the kinds first appear.
    /// The error is the one the jobs drawn whole would end with.
    pub fn survey(mut self) -> Result<SynthSurvey, TraceError> {
        let mut survey = SynthSurvey { kinds: Vec::new(), span: None };
        while let Some(draw) = self.draw() {
            let draw = draw?;
            let submit = SimTime(draw.submit_ms);
            survey.span = Some(survey.span.map_or((submit, submit), |(first, _)| (first, submit)));
            match survey.kinds.iter_mut().find(|(job, _)| job.tasks[0].gpus == draw.gpus) {
                Some((_, count)) => *count += 1,
                None => survey.kinds.push((self.build(&draw), 1)),
            }
        }
        Ok(survey)
    }
}

/// The drawn workload in brief (see [`SynthJobs::survey`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SynthSurvey {
    /// Each kind of job (the first drawn of its GPU count) and how many jobs are like it, in
    /// the order the kinds first appear.
    pub kinds: Vec<(JobSpec, usize)>,
    /// The first and the last submission, if any job was drawn.
    pub span: Option<(SimTime, SimTime)>,
}

impl Iterator for SynthJobs {
    type Item = Result<JobSpec, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(self.draw()?.map(|draw| self.build(&draw)))
    }
}

/// Seconds to whole milliseconds, rounding half away from zero; NaN and negatives become 0,
/// huge values saturate (`as` does both).
fn to_ms(seconds: f64) -> u64 {
    (seconds * 1000.0).round() as u64
}

/// The mix entry that `pick` (uniform in `[0, total weight)`) falls into.
fn choose(mix: &[(u32, f64)], pick: f64) -> u32 {
    let mut acc = 0.0;
    for &(gpus, weight) in mix {
        acc += weight;
        if pick < acc {
            return gpus;
        }
    }
    // Rounding can leave `pick` a hair above the running sum: take the last weighted entry.
    mix.iter().rev().find(|m| m.1 > 0.0).map_or(1, |m| m.0)
}

/// E[min(X, cap)] for X ~ lognormal(mu, sigma).
fn capped_lognormal_mean(mu: f64, sigma: f64, cap: f64) -> f64 {
    if sigma == 0.0 {
        return mu.exp().min(cap);
    }
    let c = cap.ln();
    (mu + sigma * sigma / 2.0).exp() * normal_cdf((c - mu - sigma * sigma) / sigma)
        + cap * (1.0 - normal_cdf((c - mu) / sigma))
}

/// Standard normal CDF via the complementary error function (Numerical Recipes `erfcc`,
/// fractional error below 1.2e-7: plenty for setting an arrival rate).
pub(crate) fn normal_cdf(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98 + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    if x >= 0.0 { 1.0 - erfc / 2.0 } else { erfc / 2.0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::TraceStats;

    fn small(seed: u64) -> SynthConfig {
        SynthConfig { jobs: 500, seed, ..SynthConfig::default() }
    }

    #[test]
    fn same_seed_same_workload_other_seed_other_workload() {
        let a = small(7).generate().unwrap();
        let b = small(7).generate().unwrap();
        let c = small(8).generate().unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.len(), 500);
    }

    #[test]
    fn jobs_respect_floor_cap_and_mix() {
        let config = SynthConfig { jobs: 5_000, duration_cap_s: 86_400.0, ..SynthConfig::default() };
        let w = config.generate().unwrap();
        let allowed: Vec<u32> = PHILLY_GPU_MIX.iter().map(|m| m.0).collect();
        for job in w.jobs() {
            let task = &job.tasks[0];
            assert!((1_000..=86_400_000).contains(&task.work.as_ms()), "{job:?}");
            assert!(allowed.contains(&task.gpus));
            assert!(task.estimate.get().is_some_and(|e| e.as_ms() >= 1_000));
        }
        let stats = TraceStats::of(&w);
        let ones = stats.gpus_per_job[&1] as f64 / 5_000.0;
        assert!((0.77..0.83).contains(&ones), "share of 1-GPU jobs {ones}");
        let p50 = stats.duration.unwrap().p50_ms as f64 / 1000.0;
        assert!((1_000.0..1_450.0).contains(&p50), "median duration {p50} s");
    }

    #[test]
    fn turning_estimates_off_changes_nothing_else() {
        let with = small(3).generate().unwrap();
        let without = SynthConfig { estimate_sigma: None, ..small(3) }.generate().unwrap();
        for (a, b) in with.jobs().iter().zip(without.jobs()) {
            assert_eq!((a.submit, a.tasks[0].work, a.tasks[0].gpus), (b.submit, b.tasks[0].work, b.tasks[0].gpus));
            assert_eq!(b.tasks[0].estimate.get(), None);
        }
    }

    #[test]
    fn estimates_are_noisy_but_centred() {
        let w = SynthConfig { jobs: 4_000, ..SynthConfig::default() }.generate().unwrap();
        let mut log_ratios: Vec<f64> = w
            .jobs()
            .iter()
            .map(|j| (j.tasks[0].estimate.get().unwrap().as_ms() as f64 / j.tasks[0].work.as_ms() as f64).ln())
            .collect();
        log_ratios.sort_by(f64::total_cmp);
        let median = log_ratios[log_ratios.len() / 2];
        assert!(median.abs() < 0.05, "median log(estimate/work) {median}");
        let exact = log_ratios.iter().filter(|r| r.abs() < 1e-9).count();
        assert!(exact < 100, "{exact} estimates equal the truth");
    }

    #[test]
    fn default_targets_the_asked_load() {
        let config = SynthConfig::for_cluster(128, 0.8);
        assert!((config.offered_load(128) - 0.8).abs() < 1e-9);
        // Over many jobs the realised load is near the target despite the heavy tail.
        let w = SynthConfig { jobs: 200_000, ..config }.generate().unwrap();
        let stats = TraceStats::of(&w);
        let span_s = stats.latest_submit_ms.unwrap() as f64 / 1000.0;
        let load = stats.gpu_hours * 3600.0 / (span_s * 128.0);
        assert!((0.65..0.95).contains(&load), "realised load {load}");
    }

    #[test]
    fn capped_mean_matches_monte_carlo() {
        // Cap near the median so the cap matters; sigma 1 keeps the sample mean tight.
        let config = SynthConfig {
            jobs: 100_000,
            duration_median_s: 1_000.0,
            duration_sigma: 1.0,
            duration_cap_s: 3_000.0,
            gpu_mix: vec![(1, 1.0)],
            estimate_sigma: None,
            ..SynthConfig::default()
        };
        let w = config.generate().unwrap();
        let mean = TraceStats::of(&w).gpu_hours * 3600.0 / 100_000.0;
        let expected = config.mean_gpu_seconds_per_job();
        assert!((mean / expected - 1.0).abs() < 0.01, "sample {mean} vs formula {expected}");
    }

    #[test]
    fn for_load_sets_jobs_and_seed() {
        let config = SynthConfig::for_load(300, 64, 0.5, 9);
        assert_eq!((config.jobs, config.seed), (300, 9));
        assert!((config.offered_load(64) - 0.5).abs() < 1e-9);
        assert_eq!(config.generate().unwrap(), SynthConfig { seed: 9, ..config.clone() }.generate().unwrap());
    }

    #[test]
    fn small_clusters_get_jobs_that_fit() {
        let config = SynthConfig::for_cluster(8, 0.8);
        assert!(config.gpu_mix.iter().all(|m| m.0 <= 8));
        assert!(config.arrival_rate_per_hour > 0.0);
    }

    #[test]
    fn bad_settings_are_errors() {
        let bad = |c: SynthConfig| c.generate().unwrap_err().to_string();
        assert!(bad(SynthConfig { jobs: 0, ..small(1) }).contains("jobs must be"));
        let in_memory = SynthConfig { jobs: MAX_SYNTH_JOBS + 1, ..small(1) }.generate().unwrap_err().to_string();
        assert!(in_memory.contains("held in memory") && in_memory.contains("--stream"), "{in_memory}");
        let drawn = SynthConfig { jobs: MAX_SYNTH_JOBS + 1, ..small(1) }.jobs().map(|mut jobs| jobs.next().is_some());
        assert!(matches!(drawn, Ok(true)), "more jobs than fit in memory can still be drawn");
        assert!(SynthConfig { jobs: MAX_DRAWN_SYNTH_JOBS + 1, ..small(1) }.jobs().is_err());
        assert!(bad(SynthConfig { arrival_rate_per_hour: f64::NAN, ..small(1) }).contains("arrival rate"));
        assert!(bad(SynthConfig { gpu_mix: vec![], ..small(1) }).contains("GPU mix"));
        assert!(bad(SynthConfig { gpu_mix: vec![(0, 1.0)], ..small(1) }).contains("GPU mix"));
        assert!(bad(SynthConfig { duration_sigma: -1.0, ..small(1) }).contains("sigma"));
        assert!(bad(SynthConfig { arrival_rate_per_hour: 1e-12, ..small(1) }).contains("arrivals run past"));
    }

    #[test]
    fn a_survey_counts_the_kinds_and_the_span_of_the_jobs_drawn_whole() {
        let config = SynthConfig::for_load(20_000, 64, 0.9, 4);
        let jobs: Vec<JobSpec> = config.jobs().unwrap().map(Result::unwrap).collect();
        let survey = config.jobs().unwrap().survey().unwrap();
        assert_eq!(survey.span, Some((jobs[0].submit, jobs[jobs.len() - 1].submit)));
        let mut kinds: Vec<(JobSpec, usize)> = Vec::new();
        for job in &jobs {
            match kinds.iter_mut().find(|(kind, _)| kind.tasks[0].gpus == job.tasks[0].gpus) {
                Some((_, count)) => *count += 1,
                None => kinds.push((job.clone(), 1)),
            }
        }
        assert_eq!(kinds.len(), 6, "every GPU count of the mix is drawn");
        assert_eq!(survey.kinds, kinds);
        let late = SynthConfig { arrival_rate_per_hour: 1e-12, ..small(1) };
        assert_eq!(late.jobs().unwrap().survey().unwrap_err(), late.jobs().unwrap().find_map(Result::err).unwrap());
    }

    #[test]
    fn normal_cdf_is_accurate() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(1.96) - 0.975_002_1).abs() < 1e-6);
        assert!((normal_cdf(-1.0) - 0.158_655_25).abs() < 1e-6);
    }
}
