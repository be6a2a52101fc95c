//! fleetbot's own descriptor set, read at run time: every message of `proto/` as a
//! [`DynamicMessage`], and the annotations Nebius puts on its fields (`nebius.field_behavior`,
//! `buf.validate` `required`, `nebius.oneof_behavior`, `nebius.resource_behavior`). The client
//! builds reset masks from them as the SDK does ([`super::reset_mask`]); the simulator
//! validates and patches with them as Nebius does. Nothing here is written by hand per field:
//! the protos carry the annotations upstream has, and this module only reads them.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use prost::{Message, Name};
use prost_reflect::{
    DescriptorPool, DynamicMessage, FieldDescriptor, MessageDescriptor, OneofDescriptor, Value,
};

use super::proto::FILE_DESCRIPTOR_SET;

/// `nebius.FieldBehavior`, as the annotations carry it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Behavior {
    Immutable,
    Identifier,
    InputOnly,
    OutputOnly,
    MeaningfulEmptyValue,
    NonEmptyDefault,
}

impl Behavior {
    fn from_number(n: i32) -> Option<Behavior> {
        Some(match n {
            2 => Behavior::Immutable,
            3 => Behavior::Identifier,
            4 => Behavior::InputOnly,
            // PUBLIC_OUTPUT_ONLY is "the same as OUTPUT_ONLY".
            5 | 8 => Behavior::OutputOnly,
            6 => Behavior::MeaningfulEmptyValue,
            7 => Behavior::NonEmptyDefault,
            _ => return None,
        })
    }
}

/// `nebius.ResourceBehavior`, on a resource message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResourceBehavior {
    Movable,
    Unnamed,
    ImmutableName,
}

/// Every annotation of the descriptor set, read once.
struct Annotations {
    /// Field full name → its behaviours.
    fields: HashMap<String, Vec<Behavior>>,
    /// Fields with `(buf.validate.field).required = true`.
    required_fields: HashSet<String>,
    /// Oneof full name → its behaviours.
    oneofs: HashMap<String, Vec<Behavior>>,
    /// Oneofs with `(buf.validate.oneof).required = true`.
    required_oneofs: HashSet<String>,
    /// Message full name → its resource behaviours.
    messages: HashMap<String, Vec<ResourceBehavior>>,
}

static POOL: LazyLock<DescriptorPool> = LazyLock::new(|| {
    DescriptorPool::decode(FILE_DESCRIPTOR_SET).expect("the built-in descriptor set decodes")
});

static ANNOTATIONS: LazyLock<Annotations> = LazyLock::new(read_annotations);

/// The descriptor pool of every file in `proto/` and its imports.
pub fn pool() -> &'static DescriptorPool {
    &POOL
}

/// The descriptor of a generated message type.
pub fn descriptor<M: Name>() -> MessageDescriptor {
    descriptor_by_name(&M::full_name())
}

/// The descriptor of a message by its full name; every generated type has one.
pub fn descriptor_by_name(full_name: &str) -> MessageDescriptor {
    POOL.get_message_by_name(full_name)
        .unwrap_or_else(|| panic!("{full_name} is not in the descriptor set"))
}

/// A generated message as a dynamic one (same bytes, same descriptor).
pub fn to_dynamic<M: Message + Name>(message: &M) -> DynamicMessage {
    DynamicMessage::decode(descriptor::<M>(), message.encode_to_vec().as_slice())
        .expect("a generated message decodes as its own descriptor")
}

/// A dynamic message back as the generated type of the same descriptor.
pub fn from_dynamic<M: Message + Default>(message: &DynamicMessage) -> M {
    M::decode(message.encode_to_vec().as_slice())
        .expect("a dynamic message decodes as the generated type of its descriptor")
}

pub fn behaviors(field: &FieldDescriptor) -> &'static [Behavior] {
    ANNOTATIONS
        .fields
        .get(field.full_name())
        .map_or(&[], Vec::as_slice)
}

pub fn has_behavior(field: &FieldDescriptor, behavior: Behavior) -> bool {
    behaviors(field).contains(&behavior)
}

pub fn oneof_has_behavior(oneof: &OneofDescriptor, behavior: Behavior) -> bool {
    ANNOTATIONS
        .oneofs
        .get(oneof.full_name())
        .is_some_and(|b| b.contains(&behavior))
}

/// `(buf.validate.field).required = true`.
pub fn is_required(field: &FieldDescriptor) -> bool {
    ANNOTATIONS.required_fields.contains(field.full_name())
}

/// `(buf.validate.oneof).required = true`: exactly one member must be set.
pub fn oneof_is_required(oneof: &OneofDescriptor) -> bool {
    ANNOTATIONS.required_oneofs.contains(oneof.full_name())
}

pub fn resource_behaviors(message: &MessageDescriptor) -> &'static [ResourceBehavior] {
    ANNOTATIONS
        .messages
        .get(message.full_name())
        .map_or(&[], Vec::as_slice)
}

/// Whether a field holds a value in the sense of protovalidate's `required` and of the SDK's
/// reset mask: a message or explicit-presence field is present, a list or map is not empty,
/// any other scalar is not its zero value.
pub fn has_value(message: &DynamicMessage, field: &FieldDescriptor) -> bool {
    message.has_field(field)
}

fn read_annotations() -> Annotations {
    let pool = &*POOL;
    let ext = |name: &str| {
        pool.get_extension_by_name(name)
            .unwrap_or_else(|| panic!("extension {name} is not in the descriptor set"))
    };
    let field_behavior = ext("nebius.field_behavior");
    let oneof_behavior = ext("nebius.oneof_behavior");
    let resource_behavior = ext("nebius.resource_behavior");
    let field_rules = ext("buf.validate.field");
    let oneof_rules = ext("buf.validate.oneof");
    let numbers = |value: &Value| -> Vec<i32> {
        match value {
            Value::List(items) => items.iter().filter_map(Value::as_enum_number).collect(),
            Value::EnumNumber(n) => vec![*n],
            _ => Vec::new(),
        }
    };
    let required = |options: &DynamicMessage, ext: &prost_reflect::ExtensionDescriptor| {
        options.has_extension(ext)
            && options
                .get_extension(ext)
                .as_message()
                .and_then(|rules| rules.get_field_by_name("required"))
                .is_some_and(|v| v.as_bool() == Some(true))
    };
    let mut out = Annotations {
        fields: HashMap::new(),
        required_fields: HashSet::new(),
        oneofs: HashMap::new(),
        required_oneofs: HashSet::new(),
        messages: HashMap::new(),
    };
    for message in pool.all_messages() {
        let options = message.options();
        let behaviours: Vec<ResourceBehavior> = numbers(&options.get_extension(&resource_behavior))
            .into_iter()
            .filter_map(|n| match n {
                1 => Some(ResourceBehavior::Movable),
                2 => Some(ResourceBehavior::Unnamed),
                3 => Some(ResourceBehavior::ImmutableName),
                _ => None,
            })
            .collect();
        if !behaviours.is_empty() {
            out.messages
                .insert(message.full_name().to_string(), behaviours);
        }
        for field in message.fields() {
            let options = field.options();
            let behaviours: Vec<Behavior> = numbers(&options.get_extension(&field_behavior))
                .into_iter()
                .filter_map(Behavior::from_number)
                .collect();
            if !behaviours.is_empty() {
                out.fields.insert(field.full_name().to_string(), behaviours);
            }
            if required(&options, &field_rules) {
                out.required_fields.insert(field.full_name().to_string());
            }
        }
        for oneof in message.oneofs() {
            let options = oneof.options();
            let behaviours: Vec<Behavior> = numbers(&options.get_extension(&oneof_behavior))
                .into_iter()
                .filter_map(Behavior::from_number)
                .collect();
            if !behaviours.is_empty() {
                out.oneofs.insert(oneof.full_name().to_string(), behaviours);
            }
            if required(&options, &oneof_rules) {
                out.required_oneofs.insert(oneof.full_name().to_string());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::proto::nebius::mk8s::v1 as mk8s;

    fn field(message: &str, name: &str) -> FieldDescriptor {
        descriptor_by_name(message)
            .get_field_by_name(name)
            .unwrap_or_else(|| panic!("{message}.{name}"))
    }

    #[test]
    fn annotations_are_read_from_the_descriptor_set() {
        let subnet = field("nebius.mk8s.v1.ControlPlaneSpec", "subnet_id");
        assert!(has_behavior(&subnet, Behavior::Immutable));
        assert!(is_required(&subnet));
        let version = field("nebius.mk8s.v1.ControlPlaneSpec", "version");
        assert!(behaviors(&version).is_empty());
        assert!(!is_required(&version));
        let created = field("nebius.common.v1.ResourceMetadata", "created_at");
        assert_eq!(behaviors(&created), [Behavior::OutputOnly]);
        let boot = field("nebius.mk8s.v1.NodeTemplate", "boot_disk");
        assert_eq!(behaviors(&boot), [Behavior::NonEmptyDefault]);
        let size = descriptor_by_name("nebius.mk8s.v1.NodeGroupSpec")
            .oneofs()
            .find(|o| o.name() == "size")
            .unwrap();
        assert!(oneof_is_required(&size));
        assert_eq!(
            resource_behaviors(&descriptor_by_name("nebius.storage.v1.Bucket")),
            [ResourceBehavior::ImmutableName]
        );
    }

    #[test]
    fn generated_and_dynamic_messages_round_trip() {
        let spec = mk8s::NodeGroupSpec {
            size: Some(mk8s::node_group_spec::Size::FixedNodeCount(3)),
            ..Default::default()
        };
        let dynamic = to_dynamic(&spec);
        assert!(has_value(
            &dynamic,
            &field("nebius.mk8s.v1.NodeGroupSpec", "fixed_node_count")
        ));
        assert!(!has_value(
            &dynamic,
            &field("nebius.mk8s.v1.NodeGroupSpec", "template")
        ));
        assert_eq!(from_dynamic::<mk8s::NodeGroupSpec>(&dynamic), spec);
    }
}
