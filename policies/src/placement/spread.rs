//! `spread`: balance load. The pool with the most free GPUs (lowest id on ties), and there the
//! emptiest node that holds the whole gang (worst fit); a gang larger than any node's free
//! GPUs takes the emptiest nodes first, as with `pack`; one that fixes its GPUs per node takes
//! the emptiest nodes.

use super::{Candidates, Fit, GpuList, Shape, fits_in, least_by_key, take_from_pool};
use std::cmp::Reverse;

pub(super) fn place(shape: Shape, free: &Candidates<'_>, gpus: &mut GpuList) -> Option<()> {
    let fitting = shape.pools.iter().filter(|&p| fits_in(shape, p, free));
    let pool = least_by_key(fitting, |p| (Reverse(free.in_pool(p)), p))?;
    take_from_pool(shape, pool, free, Fit::Worst, gpus)
}
