//! Maps that give back their room once a burst of entries has gone.
//!
//! A `HashMap` keeps the capacity it once needed: after 32,000 previews
//! were staged and decided, the maps that held one entry each would pin
//! that room for good.

use std::hash::{BuildHasher, Hash};

/// The maps of the crate: keys are ids the session made, inode and handle
/// numbers and thread ids, so a fast hash (seeded per process) serves
/// better than SipHash, which took a tenth of the work of one `echo`.
pub(crate) type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A set with the hash of [`HashMap`].
pub(crate) type HashSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// Below this capacity a map is left alone (shrinking it saves nothing).
const SMALL: usize = 1024;

/// Removes `key` from `map`, and gives back most of the map's room when it
/// is by then mostly empty.
pub(crate) fn remove_and_shrink<K, V, Q, S>(
    map: &mut std::collections::HashMap<K, V, S>,
    key: &Q,
) -> Option<V>
where
    K: Hash + Eq + std::borrow::Borrow<Q>,
    Q: Hash + Eq + ?Sized,
    S: BuildHasher,
{
    let removed = map.remove(key);
    shrink_when_sparse(map);
    removed
}

/// Gives back most of a map's room when it is mostly empty.
pub(crate) fn shrink_when_sparse<K: Hash + Eq, V, S: BuildHasher>(
    map: &mut std::collections::HashMap<K, V, S>,
) {
    if map.capacity() > SMALL && map.len() * 4 < map.capacity() {
        map.shrink_to(map.len() * 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_emptied_after_a_burst_gives_its_room_back() {
        let mut map: HashMap<u64, u64> = (0..10_000).map(|key| (key, key)).collect();
        let burst = map.capacity();
        for key in 0..9_990 {
            assert_eq!(remove_and_shrink(&mut map, &key), Some(key));
        }
        assert_eq!(map.len(), 10);
        assert!(map.capacity() <= SMALL * 2, "{} of {burst}", map.capacity());
        assert_eq!(remove_and_shrink(&mut map, &9_995), Some(9_995));
        assert_eq!(map.get(&9_999), Some(&9_999));
    }
}
