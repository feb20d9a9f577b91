//! Per-thread arrays with one entry per chunk, all zero between requests. A warm query on a
//! large repository touches a few thousand of its hundreds of thousands of chunks; allocating
//! and filling a fresh array per query cost more than the entries it used (the monorepo's 180k
//! chunks: 720 KB per array), and an isolate keeps the memory anyway. The user takes the
//! thread's array, puts back to zero the entries it set, and gives it back.

use std::cell::RefCell;
use std::thread::LocalKey;

/// Where a kind of array waits between requests (empty while it is out: a user that never
/// gives it back, on a panic or an early return, leaves the next one a fresh array).
pub type Home<T> = LocalKey<RefCell<Vec<T>>>;

/// One request's array: the thread's, or a fresh one when the thread's is in use (a request
/// within a request); every entry zero ([`Default`]) when taken.
pub struct Scratch<T: Copy + Default + PartialEq + 'static> {
    array: Vec<T>,
    /// The thread's home for it, when it came from there.
    home: Option<&'static Home<T>>,
}

impl<T: Copy + Default + PartialEq + 'static> Scratch<T> {
    /// `len` zero entries, from `home` when it is free.
    pub fn take(home: &'static Home<T>, len: usize) -> Self {
        let taken = home.with(|cell| Some(std::mem::take(&mut *cell.try_borrow_mut().ok()?)));
        let (mut array, home) = match taken {
            Some(array) => (array, Some(home)),
            None => (Vec::new(), None),
        };
        array.resize(len, T::default());
        Self { array, home }
    }

    /// The entries.
    pub fn entries(&mut self) -> &mut [T] {
        &mut self.array
    }

    /// The entries, to read.
    pub fn view(&self) -> &[T] {
        &self.array
    }

    /// The entries, read only.
    pub fn get(&self, i: usize) -> Option<T> {
        self.array.get(i).copied()
    }

    /// Gives the array back; every entry the user set must be zero again (checked in debug
    /// builds), so the next request takes it as it is.
    pub fn cleared(self) {
        debug_assert!(self.array.iter().all(|s| *s == T::default()));
        if let Some(home) = self.home {
            let array = self.array;
            home.with(|cell| {
                if let Ok(mut held) = cell.try_borrow_mut() {
                    *held = array;
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        static TEST_HOME: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
    }

    #[test]
    fn an_array_given_back_is_reused_and_one_not_given_back_is_zeroed() {
        let mut a = Scratch::take(&TEST_HOME, 8);
        a.entries()[3] = 7;
        // Taken while the thread's is out: a fresh one.
        let mut inner = Scratch::take(&TEST_HOME, 4);
        assert_eq!(inner.entries(), &[0; 4]);
        inner.cleared();
        a.entries()[3] = 0;
        a.cleared();
        let b = Scratch::take(&TEST_HOME, 8);
        assert_eq!(b.get(3), Some(0));
        assert!(b.array.capacity() >= 8);
        // Not given back, with an entry set: the next one is fresh.
        let mut c = b;
        c.entries()[5] = 9;
        drop(c);
        let d = Scratch::take(&TEST_HOME, 10);
        assert!(d.array.iter().all(|&x| x == 0));
        assert_eq!(d.array.len(), 10);
    }
}
