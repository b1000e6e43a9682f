//! Values by dense id (a task's or a job's index) for the few ids that have one at a time.
//!
//! A policy notes something for each task while it waits or runs, and a task does so only
//! between its arrival and its end: at any instant a window of the ids. A `Vec` indexed by id
//! grows to every task of the run (16 bytes a task of a million-job run is 16 MB per table,
//! and tiresias kept six). Here ids are grouped in pages of [`PAGE`], and a page is held only
//! while one of its ids has a value, so a table costs about the tasks in the system. A page
//! that empties is kept as a spare (they are clean: every slot is empty), so a task that comes
//! and goes alone on its page (a long job preempted again and again, a preemptive policy's
//! victims) neither allocates nor clears a page each time; the spares never outnumber the
//! most pages held at once.

/// Ids per page.
pub const PAGE: usize = 256;

#[derive(Debug)]
pub struct IdTable<T> {
    pages: Vec<Option<Page<T>>>,
    spares: Vec<Box<[Option<T>; PAGE]>>,
}

#[derive(Debug)]
struct Page<T> {
    /// A fixed length, so that an index `id % PAGE` needs no bounds check.
    slots: Box<[Option<T>; PAGE]>,
    /// Slots holding a value: the page is let go at zero.
    live: usize,
}

impl<T> Default for IdTable<T> {
    fn default() -> Self {
        IdTable { pages: Vec::new(), spares: Vec::new() }
    }
}

impl<T: Copy> IdTable<T> {
    #[inline]
    pub fn get(&self, id: usize) -> Option<T> {
        self.pages.get(id / PAGE)?.as_ref()?.slots[id % PAGE]
    }

    /// Whether no id has a value (then no page is held): what tests of a policy's memory read.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.pages.iter().all(Option::is_none)
    }

    pub fn contains(&self, id: usize) -> bool {
        self.get(id).is_some()
    }

    /// Asks the processor to start loading `id`'s slot, if its page is held (a hint: changes
    /// nothing, reads nothing but the page's address).
    #[inline]
    pub fn prefetch(&self, id: usize) {
        if let Some(Some(page)) = self.pages.get(id / PAGE) {
            sim::prefetch::prefetch(&page.slots[id % PAGE]);
        }
    }

    /// The ids with a value, with their values, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, T)> + '_ {
        let pages = self.pages.iter().enumerate().filter_map(|(p, page)| Some((p * PAGE, page.as_ref()?)));
        pages.flat_map(|(first, page)| page.slots.iter().enumerate().filter_map(move |(i, v)| Some((first + i, (*v)?))))
    }

    /// Sets `id`'s value, returning the one it replaces.
    pub fn insert(&mut self, id: usize, value: T) -> Option<T> {
        let page = self.page(id / PAGE);
        let old = page.slots[id % PAGE].replace(value);
        if old.is_none() {
            page.live += 1;
        }
        old
    }

    /// `id`'s value, made the default first if it has none.
    #[inline]
    pub fn get_or_default(&mut self, id: usize) -> &mut T
    where
        T: Default,
    {
        let page = self.page(id / PAGE);
        let slot = &mut page.slots[id % PAGE];
        if slot.is_none() {
            page.live += 1;
        }
        slot.get_or_insert_with(T::default)
    }

    /// Takes `id`'s value out.
    #[inline]
    pub fn remove(&mut self, id: usize) -> Option<T> {
        let page = self.pages.get_mut(id / PAGE)?.as_mut()?;
        let old = page.slots[id % PAGE].take()?;
        page.live -= 1;
        if page.live == 0 {
            self.release(id / PAGE);
        }
        Some(old)
    }

    /// Lets go of empty page `index`, keeping it as a spare (out of line: rare, and keeping
    /// it out of `remove` lets that inline).
    #[cold]
    #[inline(never)]
    fn release(&mut self, index: usize) {
        if let Some(page) = self.pages[index].take() {
            self.spares.push(page.slots);
        }
    }

    /// Page `index`, made (or a spare reused) when none of its ids has a value.
    fn page(&mut self, index: usize) -> &mut Page<T> {
        if self.pages.len() <= index {
            self.pages.resize_with(index + 1, || None);
        }
        let spares = &mut self.spares;
        self.pages[index]
            .get_or_insert_with(|| Page { slots: spares.pop().unwrap_or_else(|| Box::new([None; PAGE])), live: 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_pages_only_while_an_id_on_them_has_a_value() {
        let mut table = IdTable::default();
        assert_eq!(table.insert(3, 'a'), None);
        assert_eq!(table.insert(PAGE * 5 + 1, 'b'), None);
        assert_eq!(table.insert(3, 'c'), Some('a'));
        assert_eq!((table.get(3), table.get(4), table.get(PAGE * 5 + 1)), (Some('c'), None, Some('b')));
        assert_eq!(table.get(PAGE * 99), None);
        assert_eq!(table.pages.iter().filter(|p| p.is_some()).count(), 2);
        assert_eq!(table.remove(3), Some('c'));
        assert_eq!(table.remove(3), None);
        assert_eq!(table.pages.iter().filter(|p| p.is_some()).count(), 1, "an empty page is let go");
        assert_eq!(table.spares.len(), 1);
        // The spare comes back clean for the next page.
        assert_eq!(table.insert(PAGE * 7, 'e'), None);
        assert!(table.spares.is_empty());
        assert_eq!((table.get(PAGE * 7), table.get(PAGE * 7 + 3)), (Some('e'), None));
        assert!(table.contains(PAGE * 5 + 1) && !table.contains(PAGE * 5));
        *table.get_or_default(PAGE * 7 + 3) = 'f';
        assert_eq!(*table.get_or_default(PAGE * 7 + 3), 'f', "an id with a value keeps it");
        assert_eq!(*table.get_or_default(PAGE * 2), '\0', "an id without one gets the default");
        assert_eq!(table.pages[7].as_ref().map(|p| p.live), Some(2));
        assert_eq!(table.pages[2].as_ref().map(|p| p.live), Some(1));
    }

    #[test]
    fn matches_a_plain_vector_on_random_operations() {
        let mut next = crate::test_numbers(0x2545_f491_4f6c_dd1d);
        let mut table = IdTable::default();
        let mut plain: Vec<Option<u64>> = vec![None; PAGE * 8];
        for step in 0..20_000u64 {
            let id = (next() % (PAGE as u64 * 8)) as usize;
            match next() % 3 {
                0 => assert_eq!(table.insert(id, step), plain[id].replace(step)),
                1 => assert_eq!(table.remove(id), plain[id].take()),
                _ => assert_eq!(table.get(id), plain[id]),
            }
            let live = table.pages.iter().flatten().map(|p| p.live).sum::<usize>();
            assert_eq!(live, plain.iter().flatten().count());
        }
    }
}
