"""FIFO written in Python: the built-in `fifo`, decision for decision (the same digest).

The oldest waiting task (lowest task id: arrival order) starts where the built-in placement
puts it; while it does not fit, everything behind it waits. Quotas are not handled (`fifo`
parks a task its queue's quota holds back). Run: python fifo.py TRACE FORMAT CLUSTER
"""

import heapq


class Fifo:
    def __init__(self):
        self.heap = []  # waiting task ids, oldest first (a retried task returns to its place)
        self.waiting = set()  # those in `heap` still waiting; others are skipped when met

    def decide(self, view, plan):
        for kind, id in view.changes:
            if kind in ("ready", "preempted") or (kind == "failed" and view.startable(id)):
                if id not in self.waiting:
                    self.waiting.add(id)
                    heapq.heappush(self.heap, id)
            elif kind == "job_ended":
                self.waiting.difference_update(view.job_tasks(id))
            else:  # started, finished, or failed for good
                self.waiting.discard(id)
        while self.heap:
            task = self.heap[0]
            if task in self.waiting:
                gpus = plan.place(task)
                if gpus is None:
                    return  # strict: the head waits for GPUs, and so does everyone behind it
                plan.start(task, gpus)
                self.waiting.discard(task)
            heapq.heappop(self.heap)


if __name__ == "__main__":
    import sys

    import schedlab

    trace, format, cluster = sys.argv[1:4]
    run = schedlab.simulate(trace=trace, format=format, cluster=cluster, policy=Fifo())
    print(run.summary["policy"], run.digest, f"mean JCT {run.summary['mean_jct_s']:.0f} s")
