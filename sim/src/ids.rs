//! Dense integer identifiers. Every collection in the core is a `Vec` indexed by one of
//! these, so iteration order is the id order and never depends on hashing.

use std::fmt;

macro_rules! dense_id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u32);

        impl $name {
            pub fn index(self) -> usize {
                self.0 as usize
            }
            pub fn from_index(index: usize) -> Self {
                Self(u32::try_from(index).expect(concat!(stringify!($name), " overflows u32")))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

dense_id!(
    /// A job: the user's unit of work, made of one or more tasks.
    JobId,
    "j"
);
dense_id!(
    /// A task: the scheduler's unit, a gang of GPUs started all at once.
    TaskId,
    "t"
);
dense_id!(
    /// A node (server) of the cluster.
    NodeId,
    "n"
);
dense_id!(
    /// One GPU, numbered across the whole cluster.
    GpuId,
    "g"
);
dense_id!(
    /// A pool: nodes that all carry the same GPU type.
    PoolId,
    "p"
);
