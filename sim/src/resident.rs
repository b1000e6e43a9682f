//! Values by dense id (jobs, tasks) held only for the ids still resident: from the oldest id
//! a run still needs to the newest admitted. A streamed run admits jobs as simulated time
//! reaches them and lets them go, oldest first, once they have ended and been recorded, so
//! its memory follows the jobs in the system, not the jobs in the trace.

use std::ops::{Index, IndexMut};

/// Ids `base..base + items.len()` live in `items[..]`, of which the first `gone` have been let
/// go and wait to be dropped: dropping them one at a time would move every value each time, so
/// they go in one move once they are half of the list (each value moves at most once more).
#[derive(Debug, Clone)]
pub struct Resident<T> {
    base: usize,
    gone: usize,
    items: Vec<T>,
}

impl<T> Default for Resident<T> {
    fn default() -> Self {
        Resident { base: 0, gone: 0, items: Vec::new() }
    }
}

impl<T> Resident<T> {
    /// Adds the next id's value; returns its id.
    pub fn push(&mut self, value: T) -> usize {
        self.items.push(value);
        self.end() - 1
    }

    /// One past the newest id: how many ids were ever admitted.
    pub fn end(&self) -> usize {
        self.base + self.items.len()
    }

    /// The oldest id still held.
    pub fn first(&self) -> usize {
        self.base + self.gone
    }

    /// How many ids are held.
    pub fn held(&self) -> usize {
        self.items.len() - self.gone
    }

    pub fn get(&self, id: usize) -> Option<&T> {
        let at = id.checked_sub(self.first())?;
        self.items.get(self.gone + at)
    }

    pub fn get_mut(&mut self, id: usize) -> Option<&mut T> {
        let at = id.checked_sub(self.first())?;
        self.items.get_mut(self.gone + at)
    }

    /// The oldest value held.
    pub fn front(&self) -> Option<&T> {
        self.items.get(self.gone)
    }

    /// Lets the oldest id go.
    pub fn let_go(&mut self) {
        assert!(self.gone < self.items.len(), "nothing held to let go");
        self.gone += 1;
        if self.gone * 2 >= self.items.len() && self.gone >= 64 {
            self.items.drain(..self.gone);
            self.base += self.gone;
            self.gone = 0;
        }
    }

    /// Lets every id before `id` go.
    pub fn let_go_before(&mut self, id: usize) {
        while self.first() < id {
            self.let_go();
        }
    }

    /// The values held, with their ids, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (usize, &T)> + ExactSizeIterator {
        let first = self.first();
        self.items[self.gone..].iter().enumerate().map(move |(i, v)| (first + i, v))
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.items[self.gone..].iter_mut()
    }

    /// The held value with the highest id, taken out (records built from the back).
    pub fn pop(&mut self) -> Option<T> {
        if self.items.len() == self.gone {
            return None;
        }
        self.items.pop()
    }

    pub fn shrink_to_fit(&mut self) {
        self.items.shrink_to_fit();
    }
}

impl<T: PartialEq> PartialEq for Resident<T> {
    fn eq(&self, other: &Self) -> bool {
        self.first() == other.first() && self.items[self.gone..] == other.items[other.gone..]
    }
}

impl<T> Index<usize> for Resident<T> {
    type Output = T;
    #[inline]
    fn index(&self, id: usize) -> &T {
        match id.checked_sub(self.base) {
            Some(at) if at >= self.gone && at < self.items.len() => &self.items[at],
            _ => gone(id, self.first(), self.end()),
        }
    }
}

impl<T> IndexMut<usize> for Resident<T> {
    #[inline]
    fn index_mut(&mut self, id: usize) -> &mut T {
        let (first, end) = (self.first(), self.end());
        match id.checked_sub(self.base) {
            Some(at) if at >= self.gone && at < self.items.len() => &mut self.items[at],
            _ => gone(id, first, end),
        }
    }
}

#[cold]
#[inline(never)]
fn gone(id: usize, first: usize, end: usize) -> ! {
    panic!("id {id} is not resident (held: {first}..{end}): it left the run, or never joined it")
}

#[cfg(test)]
mod tests {
    use super::Resident;

    #[test]
    fn ids_stay_put_as_the_oldest_go() {
        let mut r = Resident::default();
        for i in 0..1000 {
            assert_eq!(r.push(i * 10), i);
        }
        r.let_go_before(700);
        assert_eq!((r.first(), r.end(), r.held()), (700, 1000, 300));
        assert_eq!(r[700], 7000);
        assert_eq!(r[999], 9990);
        assert_eq!(r.get(699), None);
        assert_eq!(r.get(1000), None);
        assert_eq!(r.iter().next(), Some((700, &7000)));
        r.push(5);
        assert_eq!(r[1000], 5);
        // The list was compacted: what is let go is dropped.
        assert!(r.items.len() <= 600, "{} values kept", r.items.len());
    }

    #[test]
    #[should_panic(expected = "id 3 is not resident (held: 100..200)")]
    fn an_id_let_go_is_refused_by_name() {
        let mut r = Resident::default();
        for i in 0..200 {
            r.push(i);
        }
        r.let_go_before(100);
        let _ = r[3];
    }
}
