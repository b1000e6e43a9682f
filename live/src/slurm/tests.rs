//! The executor against a Slurm in memory: hand-worked sessions on two nodes of 8 GPUs under
//! fifo, each step's commands and inputs written out.

use super::ctl::Slurm;
use super::executor::{SlurmExecutor, SlurmOptions};
use super::report::{SlurmJob, SlurmNode};
use crate::config::LiveConfig;
use crate::driver::{Batch, Driver, Input};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Slurm's jobs and nodes, and every command the executor gave, shared with the test.
#[derive(Default)]
struct State {
    jobs: BTreeMap<u64, SlurmJob>,
    nodes: Vec<SlurmNode>,
    commands: Vec<String>,
}

#[derive(Clone, Default)]
struct Fake(Arc<Mutex<State>>);

impl Slurm for Fake {
    fn jobs(&mut self, _: &str) -> Result<Vec<SlurmJob>, String> {
        Ok(self.0.lock().unwrap().jobs.values().cloned().collect())
    }
    fn nodes(&mut self) -> Result<Vec<SlurmNode>, String> {
        Ok(self.0.lock().unwrap().nodes.clone())
    }
    fn config(&mut self) -> Result<BTreeMap<String, String>, String> {
        Ok(BTreeMap::new())
    }
    fn pin_and_release(&mut self, job: u64, nodes: &[String]) -> Result<(), String> {
        let mut s = self.0.lock().unwrap();
        s.commands.push(format!("release {job} on {}", nodes.join(",")));
        let j = s.jobs.get_mut(&job).unwrap();
        j.priority = 100;
        j.state_reason = "None".into();
        Ok(())
    }
    fn hold(&mut self, job: u64) -> Result<(), String> {
        let mut s = self.0.lock().unwrap();
        s.commands.push(format!("hold {job}"));
        s.jobs.get_mut(&job).unwrap().priority = 0;
        Ok(())
    }
    fn requeue_held(&mut self, job: u64) -> Result<(), String> {
        let mut s = self.0.lock().unwrap();
        s.commands.push(format!("requeuehold {job}"));
        let j = s.jobs.get_mut(&job).unwrap();
        j.job_state = "PENDING".into();
        j.priority = 0;
        j.restart_cnt += 1;
        Ok(())
    }
}

impl Fake {
    fn add_job(&self, id: u64, nodes: u32, gpus_per_node: u32) {
        let json = format!(
            r#"{{"jobs":[{{"job_id":{id},"job_state":"PENDING","state_reason":"JobHeldUser","priority":0,
            "partition":"gpu","node_count":{nodes},"tres_per_node":"gres:gpu:{gpus_per_node}","time_limit":10}}]}}"#
        );
        let job = super::report::jobs(&json).unwrap().remove(0);
        self.0.lock().unwrap().jobs.insert(id, job);
    }
    fn set(&self, id: u64, state: &str, nodes: &str, exit_code: i64) {
        let mut s = self.0.lock().unwrap();
        let j = s.jobs.get_mut(&id).unwrap();
        j.job_state = state.into();
        j.nodes = nodes.into();
        j.start_time = 1;
        j.exit_code = exit_code;
    }
    fn commands(&self) -> Vec<String> {
        std::mem::take(&mut self.0.lock().unwrap().commands)
    }
}

fn fake_cluster() -> Fake {
    let fake = Fake::default();
    let node = |name: &str| SlurmNode {
        name: name.into(),
        state: "idle".into(),
        state_flags: vec![],
        gres: "gpu:8".into(),
        partitions: vec!["gpu".into()],
        reason: String::new(),
    };
    fake.0.lock().unwrap().nodes = vec![node("n1"), node("n2")];
    fake
}

struct Session {
    fake: Fake,
    driver: Driver,
    executor: SlurmExecutor,
    time_ms: u64,
    start: Instant,
}

impl Session {
    fn new(fake: &Fake) -> Session {
        let config = LiveConfig::new("2x8:gpu", "fifo").unwrap().with_heartbeat_ms(10_000);
        let (_, names) = super::mapping::cluster(&fake.0.lock().unwrap().nodes, "gpu").unwrap();
        let options = SlurmOptions { start_deadline: Duration::from_secs(30), ..SlurmOptions::default() };
        Session {
            fake: fake.clone(),
            driver: Driver::new(config).unwrap(),
            executor: SlurmExecutor::new(Box::new(fake.clone()), options, names),
            time_ms: 0,
            start: Instant::now(),
        }
    }

    /// One poll at `seconds`: Slurm read into a batch, applied, then acted on. The inputs other
    /// than beats, and the commands given.
    fn poll(&mut self, seconds: u64, runs: &mut BTreeMap<(u64, u32), u32>) -> (Vec<Input>, Vec<String>) {
        self.time_ms = self.time_ms.max(seconds * 1000);
        let inputs = self.executor.observe(&self.driver).unwrap();
        self.driver.apply(Batch { time_ms: self.time_ms, inputs: inputs.clone() }).unwrap();
        let now = self.start + Duration::from_secs(seconds);
        self.executor.act(&self.driver, now, &mut |job, attempt, run| {
            runs.insert((job, attempt), run);
            Ok(())
        });
        let shown = inputs.into_iter().filter(|i| !matches!(i, Input::Beat { .. })).collect();
        (shown, self.fake.commands())
    }
}

fn names(inputs: &[Input]) -> Vec<String> {
    inputs
        .iter()
        .map(|i| match i {
            Input::Submit { job } => format!("submit {}", job.name),
            Input::Exit { task, attempt, code } => format!("exit task {task} attempt {attempt} code {code}"),
            Input::GpuFail { node, slot, .. } => format!("gpu_fail {node}/{slot}"),
            Input::GpuRepair { node, slot } => format!("gpu_repair {node}/{slot}"),
            Input::Cancel { job } => format!("cancel {job}"),
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn a_start_is_a_pin_and_release_and_the_run_ends_as_an_exit() {
    let fake = fake_cluster();
    let mut s = Session::new(&fake);
    let mut runs = BTreeMap::new();
    fake.add_job(5, 1, 8);
    fake.add_job(6, 2, 8);
    // t=1: both arrive; fifo starts job 5 (one node); job 6 (two whole nodes) waits.
    let (inputs, commands) = s.poll(1, &mut runs);
    assert_eq!(names(&inputs), ["submit slurm-5", "submit slurm-6"]);
    assert_eq!(commands, ["release 5 on n1"]);
    assert_eq!(runs, BTreeMap::from([((5, 1), 0)]));
    // t=2: Slurm runs it on n1: confirmed, nothing to do.
    fake.set(5, "RUNNING", "n1", 0);
    assert_eq!(s.poll(2, &mut runs), (vec![], vec![]));
    // t=9: it completes: the exit of attempt 1; fifo starts job 6 on both nodes.
    fake.set(5, "COMPLETED", "n1", 0);
    let (inputs, commands) = s.poll(9, &mut runs);
    assert_eq!(names(&inputs), ["exit task 0 attempt 1 code 0"]);
    assert_eq!(commands, ["release 6 on n1,n2"]);
    // t=10: the ended run of job 5 is not counted twice.
    assert_eq!(s.poll(10, &mut runs), (vec![], vec![]));
    // t=20: job 6 exits 3 (a wait status of 3 << 8): its attempt fails.
    fake.set(6, "FAILED", "n[1-2]", 3 << 8);
    let (inputs, _) = s.poll(20, &mut runs);
    assert_eq!(names(&inputs), ["exit task 1 attempt 1 code 3"]);
    assert_eq!(s.driver.job_state(1), sim::JobStatus::Failed);
}

#[test]
fn a_release_not_started_in_time_is_held_and_placed_again() {
    let fake = fake_cluster();
    let mut s = Session::new(&fake);
    let mut runs = BTreeMap::new();
    fake.add_job(7, 1, 4);
    assert_eq!(s.poll(1, &mut runs).1, ["release 7 on n1"]);
    // Still pending at t=30 (29 s after the release): waits.
    assert_eq!(s.poll(30, &mut runs), (vec![], vec![]));
    // t=31: 30 s: held again, and given back at the next poll as a GPU failure repaired at
    // once; fifo places it anew (the same node: nothing else is known) as attempt 2.
    assert_eq!(s.poll(31, &mut runs), (vec![], vec!["hold 7".to_string()]));
    let (inputs, commands) = s.poll(32, &mut runs);
    assert_eq!(names(&inputs), ["gpu_fail 0/0", "gpu_repair 0/0"]);
    assert_eq!(commands, ["release 7 on n1"]);
    assert_eq!(runs, BTreeMap::from([((7, 1), 0), ((7, 2), 0)]));
}

#[test]
fn a_preempted_run_is_requeued_held_and_its_next_attempt_is_a_new_run() {
    let fake = fake_cluster();
    let mut s = Session::new(&fake);
    let mut runs = BTreeMap::new();
    fake.add_job(8, 1, 8);
    assert_eq!(s.poll(1, &mut runs).1, ["release 8 on n1"]);
    fake.set(8, "RUNNING", "n1", 0);
    s.poll(2, &mut runs);
    // The engine takes n1's GPUs out (Slurm drains the node): the attempt ends in the engine,
    // so its run is requeued held; fifo places attempt 2 on n2 as a new run (restart 1).
    fake.0.lock().unwrap().nodes[0].state = "drained".into();
    let (inputs, commands) = s.poll(3, &mut runs);
    assert_eq!(names(&inputs).len(), 8, "n1's 8 GPUs out: {inputs:?}");
    assert_eq!(commands, ["requeuehold 8"]);
    assert_eq!(runs.get(&(8, 2)), Some(&1));
    // t=4: the requeue took (restart 1, held): attempt 2 is released on n2, once.
    assert_eq!(s.poll(4, &mut runs).1, ["release 8 on n2"]);
    assert_eq!(s.poll(5, &mut runs).1, Vec::<String>::new());
}

#[test]
fn a_restarted_executor_releases_what_it_recorded_but_never_released_and_nothing_twice() {
    let fake = fake_cluster();
    let mut s = Session::new(&fake);
    let mut runs = BTreeMap::new();
    fake.add_job(9, 1, 2);
    fake.add_job(10, 1, 2);
    assert_eq!(s.poll(1, &mut runs).1, ["release 9 on n1", "release 10 on n1"]);
    fake.set(9, "RUNNING", "n1", 0);
    // Job 10's release was lost (the coordinator died between its record and its command):
    // Slurm holds it still.
    {
        let mut state = fake.0.lock().unwrap();
        let j = state.jobs.get_mut(&10).unwrap();
        j.priority = 0;
        j.state_reason = "JobHeldUser".into();
    }
    // A new executor over the same driver state and records: job 9 runs (not released
    // again), job 10 is released now.
    let options = SlurmOptions::default();
    let names = vec!["n1".to_string(), "n2".to_string()];
    s.executor = SlurmExecutor::new(Box::new(fake.clone()), options, names);
    s.executor.load_runs(runs.clone());
    assert_eq!(s.poll(2, &mut runs).1, ["release 10 on n1"]);
    assert_eq!(s.poll(3, &mut runs).1, Vec::<String>::new());
}

#[test]
fn a_run_lost_with_its_node_is_the_nodes_outage_and_no_repair() {
    let fake = fake_cluster();
    let mut s = Session::new(&fake);
    let mut runs = BTreeMap::new();
    fake.add_job(11, 1, 8);
    assert_eq!(s.poll(1, &mut runs).1, ["release 11 on n1"]);
    fake.set(11, "RUNNING", "n1", 0);
    s.poll(2, &mut runs);
    // In one poll n1 goes down and drained, and Slurm requeues the run itself (pending, a begin
    // time ahead, not held). n1's GPUs go out; the run's attempt is not also given back as a
    // GPU failure repaired at once, which would end the outage of that GPU in the same batch.
    fake.0.lock().unwrap().nodes[0].state = "down".into();
    {
        let mut state = fake.0.lock().unwrap();
        let j = state.jobs.get_mut(&11).unwrap();
        j.job_state = "PENDING".into();
        j.state_reason = "BeginTime".into();
        j.restart_cnt = 1;
    }
    let (inputs, commands) = s.poll(3, &mut runs);
    let out: Vec<String> = (0..8).map(|slot| format!("gpu_fail 0/{slot}")).collect();
    assert_eq!(names(&inputs), out);
    // The engine placed attempt 2 on n2: its run is the requeued one (restart 1), released
    // only once held.
    assert_eq!(commands, ["hold 11"]);
    assert_eq!(s.poll(4, &mut runs).1, ["release 11 on n2"]);
    assert_eq!(runs.get(&(11, 2)), Some(&1));
}
