//! One `decide` call's view and plan, reachable from Python handles for that call only.
//!
//! `sim::Policy::decide` lends a `&ClusterView` and a `&mut Plan` for the length of the call;
//! Python objects may outlive it (a policy can keep `self.plan = plan`). So the handles do not
//! hold the borrows: they share a slot that holds raw pointers while the call runs and is
//! emptied when it returns (by a drop guard, so also on an error). Every use goes through
//! [`Call::with`], which finds the slot empty after the call (a Python error, never a dangling
//! pointer) and takes the slot's lock, so two Python threads cannot reach the `&mut Plan` at
//! once (a `try_lock`: a second thread gets an error, not a deadlock with the GIL).

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use sim::{ClusterView, Plan};
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, TryLockError};

/// The borrowed view and plan of the running call, with their lifetimes erased.
struct Borrowed {
    view: *const ClusterView<'static>,
    plan: *mut Plan<'static>,
}

// SAFETY: the pointers are dereferenced only inside `Call::with`, under the slot's lock and
// while the call that lent them is running (the slot is emptied before `decide` returns), so
// moving the slot between threads moves no access outside that window.
unsafe impl Send for Borrowed {}

/// The shared slot: `Some` while the `decide` call runs.
#[derive(Clone)]
pub struct Call(Arc<Mutex<Option<Borrowed>>>);

/// Empties the slot when dropped: the end of the `decide` call, however it ends. It holds the
/// borrows it was opened with, so it cannot outlive them.
pub struct Closes<'c>(Call, PhantomData<&'c mut ()>);

impl Drop for Closes<'_> {
    fn drop(&mut self) {
        let mut slot = self.0.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        *slot = None;
    }
}

impl Call {
    /// Lends `view` and `plan` to handles until the returned guard drops (which its lifetime
    /// makes happen before the borrows end).
    pub fn open<'c>(view: &'c ClusterView<'_>, plan: &'c mut Plan<'_>) -> (Call, Closes<'c>) {
        let borrowed = Borrowed {
            view: (view as *const ClusterView<'_>).cast::<ClusterView<'static>>(),
            plan: (plan as *mut Plan<'_>).cast::<Plan<'static>>(),
        };
        let call = Call(Arc::new(Mutex::new(Some(borrowed))));
        (call.clone(), Closes(call, PhantomData))
    }

    /// Runs `f` on the view and plan if the call is still running; a Python error otherwise.
    /// `f` cannot keep what it borrows: its result's type is chosen outside the borrow.
    pub fn with<R>(
        &self,
        f: impl for<'x> FnOnce(&'x ClusterView<'x>, &'x mut Plan<'static>) -> PyResult<R>,
    ) -> PyResult<R> {
        let mut slot = match self.0.try_lock() {
            Ok(slot) => slot,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => {
                return Err(PyRuntimeError::new_err(
                    "the view and plan of a decide call were used from two threads at once",
                ));
            }
        };
        let Some(borrowed) = slot.as_mut() else {
            return Err(PyRuntimeError::new_err(
                "this view or plan belongs to a decide call that has returned: keep task and job ids \
                 between calls, not the view or the plan",
            ));
        };
        // SAFETY: the slot holds the pointers only while the `decide` call that lent them runs
        // (`Closes` empties it before the borrows end), the lock makes this the only access
        // now, and `decide` itself does not touch them while Python runs.
        let (view, plan) = unsafe { (&*borrowed.view, &mut *borrowed.plan) };
        f(view, plan)
    }
}
