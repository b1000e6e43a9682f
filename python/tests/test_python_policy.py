"""A Python policy sees the same view and meets the same validating Plan as a Rust one; its
mistakes come back as Python errors: the Plan's reason with the task named, a traceback,
never a crash."""

import pytest
import schedlab
from conftest import SMALL_CLUSTER
from fifo import Fifo


class GivesOneGpu(Fifo):
    """Starts job a's task (4 GPUs) on one GPU once, keeps the error, then is a FIFO."""

    def __init__(self, catch):
        super().__init__()
        self.catch = catch
        self.error = None

    def decide(self, view, plan):
        if self.error is None:
            try:
                plan.start(0, [0])
            except schedlab.PlanError as error:
                self.error = str(error)
                if not self.catch:
                    raise
        super().decide(view, plan)


def test_an_illegal_start_raises_the_plans_error_with_the_task_named(small_trace):
    policy = GivesOneGpu(catch=True)
    run = schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER, policy=policy)
    assert policy.error == (
        'plan.start(t0 (job "a", task "0")): gangs are all-or-nothing: t0 asks for 4 GPUs, the plan gave 1'
    )
    # The refused decision changed nothing: the run is FIFO's.
    assert run.digest == schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER).digest
    assert run.summary["refused_decisions"] == 1


def test_an_uncaught_plan_error_fails_the_run_with_its_traceback(small_trace):
    with pytest.raises(schedlab.RunError) as raised:
        schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER, policy=GivesOneGpu(catch=False))
    message = str(raised.value)
    assert "Traceback (most recent call last)" in message
    assert 'schedlab.PlanError: plan.start(t0 (job "a", task "0")): gangs are all-or-nothing' in message


def explode():
    return 1 / 0


class Explodes:
    def decide(self, view, plan):
        explode()


def test_an_exception_in_decide_surfaces_as_a_python_traceback(small_trace):
    with pytest.raises(schedlab.RunError) as raised:
        schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER, policy=Explodes())
    message = str(raised.value)
    assert message.startswith("policy test_python_policy.py:Explodes: decide raised an exception:\n")
    assert "Traceback (most recent call last)" in message
    assert ", in explode\n" in message
    assert message.rstrip().endswith("ZeroDivisionError: division by zero")
    assert isinstance(raised.value.__cause__, ZeroDivisionError)


class FailsOnceALeft(Fifo):
    """FIFO until job a has ended and left the run (its end is told at 100), then it raises."""

    def decide(self, view, plan):
        if view.now >= 150_000:
            explode()
        super().decide(view, plan)


def test_an_exception_after_jobs_have_left_the_run_still_surfaces_as_a_traceback(small_trace):
    with pytest.raises(schedlab.RunError) as raised:
        schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER, policy=FailsOnceALeft())
    assert str(raised.value).rstrip().endswith("ZeroDivisionError: division by zero")


class KeepsTheView(Fifo):
    def decide(self, view, plan):
        self.view, self.plan = view, plan
        super().decide(view, plan)


def test_a_view_or_plan_kept_past_its_call_raises_instead_of_reading_freed_memory(small_trace):
    policy = KeepsTheView()
    schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER, policy=policy)
    with pytest.raises(RuntimeError, match="belongs to a decide call that has returned"):
        policy.view.now
    with pytest.raises(RuntimeError, match="belongs to a decide call that has returned"):
        policy.plan.start(3, [0])


class Lookups:
    """Records what the view says of the tasks that arrive, and starts nothing."""

    def __init__(self):
        self.seen = []

    def decide(self, view, plan):
        for kind, id in view.changes:
            if kind == "ready":
                job = view.task_job(id)
                self.seen.append((view.now, view.job_name(job), view.task_gpus(id), view.task_status(id)))


def test_the_view_reports_arrivals_incrementally_with_their_lookups(small_trace):
    policy = Lookups()
    schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER, policy=policy)
    assert policy.seen == [
        (0, "a", 4, "ready"),
        (10_000, "b", 8, "ready"),
        (20_000, "c", 2, "ready"),
        (30_000, "d", 1, "ready"),
    ]


def test_a_bad_id_is_an_index_error_naming_the_ids_joined(small_trace):
    class BadId:
        def decide(self, view, plan):
            view.task_gpus(4)

    with pytest.raises(schedlab.RunError, match=r"IndexError: no task 4 in the run \(tasks joined so far: 1;"):
        schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER, policy=BadId())


def test_an_object_without_decide_is_refused(small_trace):
    with pytest.raises(TypeError, match="no decide"):
        schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER, policy=object())


class Draws(Fifo):
    def __init__(self):
        super().__init__()
        self.draws = []

    def decide(self, view, plan):
        self.draws.append(plan.random())
        super().decide(view, plan)


def test_the_policys_random_stream_follows_the_seed(small_trace):
    def draws(seed):
        policy = Draws()
        schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER, policy=policy, seed=seed)
        return policy.draws

    first = draws(0)
    assert all(0 <= x < 1 for x in first) and len(set(first)) == len(first)
    assert draws(0) == first
    assert draws(1) != first


# A het job: two 2-GPU components that must start together (`co_start`), on 2x4 GPUs.
HET_JOBS = """job_id,task_id,submit_s,duration_s,gpus,co_start
h,0,0,100,2,true
h,1,0,100,2,true
"""


class Together:
    """Tries a lone start of the het job's first task (refused), then starts both at once on
    GPUs of its own choosing, one component on each node."""

    def __init__(self):
        self.error = None
        self.co_start = None

    def decide(self, view, plan):
        if self.co_start is not None:
            return
        self.co_start = view.job_co_start(0)
        try:
            plan.start(0, [0, 1])
        except schedlab.PlanError as error:
            self.error = str(error)
        plan.start_together([(0, [0, 1]), (1, [4, 5])])


def test_a_co_start_jobs_tasks_start_together_and_never_alone(tmp_path):
    trace = tmp_path / "jobs.csv"
    trace.write_text(HET_JOBS)
    policy = Together()
    run = schedlab.simulate(trace=trace, cluster=SMALL_CLUSTER, policy=policy)
    assert policy.co_start is True
    assert policy.error is not None and policy.error.startswith('plan.start(t0 (job "h", task "0"))')
    assert run.tasks["first_start_s"].to_list() == [0.0, 0.0]
    assert run.jobs["end_s"].to_list() == [100.0]
