//! Where each kind's resources sit, by ID and by parent, so a read costs what it returns and
//! not the size of the world.
//!
//! A 1,000-cluster fleet's live plan lists node groups once per cluster: scanning all of them
//! each time made every listing cost as much as the whole world (O(clusters²) for the plan).
//! A kind's positions are built from its resources when it is first read, then kept as
//! resources are added ([`Core::insert`](super::Core::insert)) and removed
//! ([`Core::remove`](super::Core::remove)); changes that keep a resource where it is (its
//! phase, status or spec, [`Core::find_mut`](super::Core::find_mut)) leave them as they are.
//!
//! In debug builds every lookup is checked against a scan, so a change that moves resources
//! without forgetting their positions fails the tests that make it.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::Mutex;

use crate::cloud::proto::fleetbot::sim::v1::SimState;
use crate::sim::resources::Resource;

/// One kind's positions.
#[derive(Debug, Default)]
struct Positions {
    by_id: HashMap<Box<str>, u32>,
    /// In the order the resources are held, so a listing pages as a scan would.
    by_parent: HashMap<Box<str>, Vec<u32>>,
}

impl Positions {
    fn of<R: Resource>(items: &[R]) -> Positions {
        let mut positions = Positions::default();
        for (at, item) in items.iter().enumerate() {
            positions.add(at, item.id(), item.parent_id());
        }
        positions
    }

    /// Notes the resource at `at`, after every resource already noted.
    fn add(&mut self, at: usize, id: &str, parent_id: &str) {
        let at = u32::try_from(at).expect("fewer than 2^32 resources of one kind");
        self.by_id.entry(id.into()).or_insert(at);
        self.by_parent.entry(parent_id.into()).or_default().push(at);
    }
}

/// The positions of every kind read since they were last forgotten.
#[derive(Debug, Default)]
pub(crate) struct Indexes {
    kinds: Mutex<HashMap<TypeId, Positions>>,
}

impl Indexes {
    /// `read` of kind `R`'s positions, built first if they were forgotten.
    fn read<R: Resource, T>(&self, state: &SimState, read: impl FnOnce(&Positions) -> T) -> T {
        let mut kinds = self.kinds.lock().unwrap_or_else(|e| e.into_inner());
        read(
            kinds
                .entry(TypeId::of::<R>())
                .or_insert_with(|| Positions::of(R::items(state))),
        )
    }

    /// Where the resource of kind `R` with this ID sits.
    pub(crate) fn position<R: Resource>(&self, state: &SimState, id: &str) -> Option<usize> {
        let at = self.read::<R, _>(state, |p| p.by_id.get(id).map(|&at| at as usize));
        debug_assert_eq!(
            at,
            R::items(state).iter().position(|r| r.id() == id),
            "the simulator's positions of {} are stale: a change moved resources without forgetting them",
            R::KIND
        );
        at
    }

    /// The resource of kind `R` with this ID.
    pub(crate) fn find<'s, R: Resource>(&self, state: &'s SimState, id: &str) -> Option<&'s R> {
        R::items(state).get(self.position::<R>(state, id)?)
    }

    /// The resources of kind `R` under `parent_id`, in the order they are held.
    pub(crate) fn children<'s, R: Resource>(
        &self,
        state: &'s SimState,
        parent_id: &str,
    ) -> Vec<&'s R> {
        let items = R::items(state);
        let children: Vec<&R> = self.read::<R, _>(state, |p| {
            p.by_parent.get(parent_id).map_or_else(Vec::new, |at| {
                at.iter().filter_map(|&at| items.get(at as usize)).collect()
            })
        });
        debug_assert!(
            children.iter().map(|r| *r as *const R).eq(items
                .iter()
                .filter(|r| r.parent_id() == parent_id)
                .map(|r| r as *const R)),
            "the simulator's positions of {} are stale: a change moved resources without forgetting them",
            R::KIND
        );
        children
    }

    /// Notes a resource of kind `R` added at `at`, the end of its kind's list. A creation
    /// keeps the positions known: a deploy creates thousands, and building them again after
    /// each would cost a scan of the world per read.
    pub(crate) fn pushed<R: Resource>(&mut self, at: usize, id: &str, parent_id: &str) {
        let kinds = self.kinds.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(positions) = kinds.get_mut(&TypeId::of::<R>()) {
            positions.add(at, id, parent_id);
        }
    }

    /// Notes that the resource of kind `R` at `at` was removed and those after it moved up
    /// one: a pass over the kind's positions as integers, with no hashing or allocation, where
    /// building them again would hash every ID.
    pub(crate) fn removed<R: Resource>(&mut self, at: usize, id: &str, parent_id: &str) {
        let kinds = self.kinds.get_mut().unwrap_or_else(|e| e.into_inner());
        let Some(positions) = kinds.get_mut(&TypeId::of::<R>()) else {
            return;
        };
        let at = at as u32;
        positions.by_id.remove(id);
        if let Some(siblings) = positions.by_parent.get_mut(parent_id) {
            siblings.retain(|&p| p != at);
            if siblings.is_empty() {
                positions.by_parent.remove(parent_id);
            }
        }
        let after = |p: &mut u32| {
            if *p > at {
                *p -= 1;
            }
        };
        positions.by_id.values_mut().for_each(after);
        positions
            .by_parent
            .values_mut()
            .for_each(|siblings| siblings.iter_mut().for_each(after));
    }

    /// Forgets every kind's positions (the state was replaced).
    pub(crate) fn forget_all(&mut self) {
        self.kinds
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::proto::nebius::common::v1::ResourceMetadata;
    use crate::cloud::proto::nebius::mk8s::v1 as mk8s;
    use proptest::prelude::*;

    fn group(id: &str, parent: &str) -> mk8s::NodeGroup {
        mk8s::NodeGroup {
            metadata: Some(ResourceMetadata {
                id: id.into(),
                parent_id: parent.into(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn positions_follow_additions_and_removals_and_a_forgotten_kind_is_read_again() {
        let mut state = SimState {
            node_groups: vec![group("g1", "c1"), group("g2", "c2"), group("g3", "c1")],
            ..Default::default()
        };
        let mut indexes = Indexes::default();
        let ids = |indexes: &Indexes, state: &SimState, parent: &str| -> Vec<String> {
            indexes
                .children::<mk8s::NodeGroup>(state, parent)
                .iter()
                .map(|g| g.metadata.as_ref().unwrap().id.clone())
                .collect()
        };
        assert_eq!(ids(&indexes, &state, "c1"), ["g1", "g3"]);
        assert!(ids(&indexes, &state, "c9").is_empty());
        assert_eq!(indexes.position::<mk8s::NodeGroup>(&state, "g2"), Some(1));
        assert!(indexes.find::<mk8s::NodeGroup>(&state, "g9").is_none());

        state.node_groups.remove(0);
        indexes.removed::<mk8s::NodeGroup>(0, "g1", "c1");
        state.node_groups.push(group("g4", "c1"));
        indexes.pushed::<mk8s::NodeGroup>(2, "g4", "c1");
        assert_eq!(ids(&indexes, &state, "c1"), ["g3", "g4"]);
        assert_eq!(indexes.position::<mk8s::NodeGroup>(&state, "g2"), Some(0));
        assert_eq!(indexes.position::<mk8s::NodeGroup>(&state, "g4"), Some(2));
        assert!(indexes.find::<mk8s::NodeGroup>(&state, "g1").is_none());

        state.node_groups.swap(0, 1);
        indexes.forget_all();
        assert_eq!(ids(&indexes, &state, "c1"), ["g3", "g4"]);
        assert_eq!(indexes.position::<mk8s::NodeGroup>(&state, "g2"), Some(1));
    }

    /// One change to the node groups: a creation under one of four clusters, or the removal
    /// of the n-th group held (modulo their number).
    #[derive(Debug, Clone)]
    enum Change {
        Create(u8),
        Remove(usize),
    }

    fn change() -> impl Strategy<Value = Change> {
        prop_oneof![
            (0u8..4).prop_map(Change::Create),
            any::<usize>().prop_map(Change::Remove),
        ]
    }

    proptest! {
        /// Whatever creations and removals come, with reads between them or not, every
        /// listing and lookup answers what a scan of the resources answers.
        #[test]
        fn positions_answer_what_a_scan_answers(
            changes in proptest::collection::vec((change(), any::<bool>()), 1..60)
        ) {
            let mut state = SimState::default();
            let mut indexes = Indexes::default();
            let mut serial = 0;
            for (change, read) in changes {
                match change {
                    Change::Create(cluster) => {
                        serial += 1;
                        let (id, parent) = (format!("g{serial}"), format!("c{cluster}"));
                        state.node_groups.push(group(&id, &parent));
                        indexes.pushed::<mk8s::NodeGroup>(state.node_groups.len() - 1, &id, &parent);
                    }
                    Change::Remove(n) if !state.node_groups.is_empty() => {
                        let at = n % state.node_groups.len();
                        let gone = state.node_groups.remove(at);
                        let meta = gone.metadata.unwrap();
                        indexes.removed::<mk8s::NodeGroup>(at, &meta.id, &meta.parent_id);
                    }
                    Change::Remove(_) => {}
                }
                if !read {
                    continue;
                }
                for cluster in 0..5 {
                    let parent = format!("c{cluster}");
                    let listed: Vec<*const mk8s::NodeGroup> = indexes
                        .children::<mk8s::NodeGroup>(&state, &parent)
                        .into_iter()
                        .map(|g| g as *const _)
                        .collect();
                    let scanned: Vec<*const mk8s::NodeGroup> = state
                        .node_groups
                        .iter()
                        .filter(|g| g.parent_id() == parent)
                        .map(|g| g as *const _)
                        .collect();
                    prop_assert_eq!(listed, scanned);
                }
                for n in 0..=serial + 1 {
                    let id = format!("g{n}");
                    prop_assert_eq!(
                        indexes.position::<mk8s::NodeGroup>(&state, &id),
                        state.node_groups.iter().position(|g| g.id() == id)
                    );
                }
            }
        }
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "positions of mk8snodegroup are stale")]
    fn a_change_that_does_not_forget_the_positions_fails_in_debug_builds() {
        let mut state = SimState {
            node_groups: vec![group("g1", "c1")],
            ..Default::default()
        };
        let indexes = Indexes::default();
        assert_eq!(indexes.children::<mk8s::NodeGroup>(&state, "c1").len(), 1);
        state.node_groups.insert(0, group("g0", "c1"));
        indexes.children::<mk8s::NodeGroup>(&state, "c1");
    }
}
