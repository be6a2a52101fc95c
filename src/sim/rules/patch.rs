//! An Update applied as Nebius applies it (the API's README, "Update" and "X-ResetMask"; the
//! gosdk's reference `PatchWithResetMask`): a field changes only when the request carries a
//! value for it or the reset mask names it. A set message is patched field by field; a list
//! or map the request carries replaces the stored one (elements in both are patched, so a
//! mask can reach into them); a message the request leaves out is reset whole when the mask
//! names it, and only at the paths the mask names inside it otherwise (as the SDK documents
//! its partial masks; the API's README and gosdk reset it whole — docs/cloud.md). OUTPUT_ONLY
//! fields are never taken from a request.

use prost_reflect::{DynamicMessage, FieldDescriptor, Kind, MapKey, ReflectMessage, Value};

use crate::cloud::reset_mask::Mask;
use crate::cloud::schema::{self, Behavior};

/// Patches `stored` with `request` (a message of the same type) under `mask` (`None`: the
/// mask names nothing at this level).
pub fn patch(stored: &mut DynamicMessage, request: &DynamicMessage, mask: Option<&Mask>) {
    let descriptor = stored.descriptor();
    for field in descriptor.fields() {
        let mut sub = mask.and_then(|m| m.sub(field.name()));
        // Naming a oneof masks every member of it.
        if sub.is_none()
            && let Some(oneof) = field.containing_oneof()
            && !oneof.is_synthetic()
            && mask.is_some_and(|m| m.sub(oneof.name()).is_some())
        {
            sub = Some(Mask::default());
        }
        let preserve = schema::has_behavior(&field, Behavior::OutputOnly);
        if !schema::has_value(request, &field) {
            match sub {
                _ if preserve => {}
                None => {}
                // A message the request leaves out, under a mask naming paths inside it:
                // only those paths are reset (the SDK's README: "resets only
                // max_size_bytes … It does not unset or change other fields").
                Some(inner)
                    if !inner.is_empty()
                        && matches!(field.kind(), Kind::Message(_))
                        && !field.is_list()
                        && !field.is_map()
                        && stored.has_field(&field) =>
                {
                    if let Value::Message(before) = stored.get_field_mut(&field) {
                        let empty = DynamicMessage::new(before.descriptor());
                        patch(before, &empty, Some(&inner));
                    }
                }
                Some(_) => stored.clear_field(&field),
            }
            continue;
        }
        if preserve {
            continue;
        }
        let incoming = request.get_field(&field);
        patch_field(stored, &field, incoming.as_ref(), sub.as_ref());
    }
}

fn patch_field(
    stored: &mut DynamicMessage,
    field: &FieldDescriptor,
    incoming: &Value,
    mask: Option<&Mask>,
) {
    match incoming {
        Value::List(items) if matches!(field.kind(), Kind::Message(_)) => {
            let mut kept = match stored.get_field(field).into_owned() {
                Value::List(old) => old,
                _ => Vec::new(),
            };
            kept.truncate(items.len());
            for (index, item) in items.iter().enumerate() {
                let Value::Message(item) = item else { continue };
                match kept.get_mut(index) {
                    Some(Value::Message(old)) => {
                        let key = index.to_string();
                        patch(old, item, mask.and_then(|m| m.sub(&key)).as_ref());
                    }
                    _ => kept.push(Value::Message(fresh(item))),
                }
            }
            stored.set_field(field, Value::List(kept));
        }
        Value::Map(entries) if map_of_messages(field) => {
            let old = match stored.get_field(field).into_owned() {
                Value::Map(old) => old,
                _ => Default::default(),
            };
            let mut next = std::collections::HashMap::new();
            for (key, value) in entries {
                let Value::Message(value) = value else {
                    continue;
                };
                let patched = match old.get(key) {
                    Some(Value::Message(before)) => {
                        let mut before = before.clone();
                        let sub = mask.and_then(|m| m.sub(&key_text(key)));
                        patch(&mut before, value, sub.as_ref());
                        before
                    }
                    _ => fresh(value),
                };
                next.insert(key.clone(), Value::Message(patched));
            }
            stored.set_field(field, Value::Map(next));
        }
        Value::Message(message) => {
            if !stored.has_field(field) {
                stored.set_field(
                    field,
                    Value::Message(DynamicMessage::new(message.descriptor())),
                );
            }
            if let Value::Message(before) = stored.get_field_mut(field) {
                patch(before, message, mask);
            }
        }
        // Scalars, lists of scalars and maps of scalars: the request's value, whole.
        value => stored.set_field(field, value.clone()),
    }
}

/// A new element: what the request sets, without what only the service may set.
fn fresh(incoming: &DynamicMessage) -> DynamicMessage {
    let mut out = DynamicMessage::new(incoming.descriptor());
    patch(&mut out, incoming, None);
    out
}

fn map_of_messages(field: &FieldDescriptor) -> bool {
    field
        .kind()
        .as_message()
        .is_some_and(|entry| matches!(entry.map_entry_value_field().kind(), Kind::Message(_)))
}

/// A map key as a mask names it.
fn key_text(key: &MapKey) -> String {
    match key {
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(n) => n.to_string(),
        MapKey::I64(n) => n.to_string(),
        MapKey::U32(n) => n.to_string(),
        MapKey::U64(n) => n.to_string(),
        MapKey::String(s) => s.clone(),
    }
}

#[cfg(test)]
#[path = "patch_tests.rs"]
mod tests;
