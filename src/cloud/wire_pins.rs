//! Pins every message field, enum value, service method and reserved number declared in proto/
//! against the upstream table in `proto/upstream-schema.txt`, so a drift from the real wire
//! format fails a test instead of a production call.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use prost::Message;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, EnumDescriptorProto, FileDescriptorSet};
use regex::Regex;

const TABLE: &str = include_str!("../../proto/upstream-schema.txt");

/// Files the upstream table leaves out on purpose; what they declare is not pinned.
const LEFT_OUT: &[&str] = &[
    "nebius/iam/v1/profile_service.proto",
    "nebius/iam/v1/tenant_user_account.proto",
    "nebius/iam/v1/user_account.proto",
    "nebius/storage/v1/lifecycle.proto",
    "nebius/storage/v1/cors.proto",
    "nebius/storage/v1/bucket_policy.proto",
    "nebius/storage/v1/bucket_counters.proto",
];

/// The upstream table: entries per fully qualified message, enum and service name.
#[derive(Default)]
struct Table {
    messages: BTreeMap<String, BTreeSet<String>>,
    enums: BTreeMap<String, BTreeSet<String>>,
    services: BTreeMap<String, BTreeSet<String>>,
    /// (message, number, field name).
    reserved: Vec<(String, i32, String)>,
}

fn parse_table(text: &str) -> Table {
    static FILE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^## \S+ \(([a-z0-9.]+)\)$").expect("static regex"));
    static ITEM: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^  (msg|enum|service) ([A-Za-z0-9_.]+) \{ ?(.*?) ?\}$").expect("static regex")
    });
    let mut table = Table::default();
    let mut package = String::new();
    for line in text.lines() {
        if let Some(c) = FILE.captures(line) {
            package = c[1].to_string();
            continue;
        }
        if let Some(rest) = line.strip_prefix("  reserved ") {
            let mut parts = rest.split_whitespace();
            let (Some(msg), Some(n), Some(name)) = (parts.next(), parts.next(), parts.next())
            else {
                panic!("bad reserved line: {line}");
            };
            table.reserved.push((
                msg.to_string(),
                n.parse().expect("number"),
                name.to_string(),
            ));
            continue;
        }
        let Some(c) = ITEM.captures(line) else {
            assert!(
                line.is_empty() || line.starts_with('#'),
                "unreadable table line: {line}"
            );
            continue;
        };
        let name = format!("{package}.{}", &c[2]);
        let sep = if &c[1] == "enum" { ", " } else { "; " };
        let entries: BTreeSet<String> = c[3]
            .split(sep)
            .filter(|e| !e.is_empty())
            .map(str::to_string)
            .collect();
        let map = match &c[1] {
            "msg" => &mut table.messages,
            "enum" => &mut table.enums,
            _ => &mut table.services,
        };
        assert!(
            map.insert(name.clone(), entries).is_none(),
            "{name} twice in the table"
        );
    }
    table
}

/// One declared item, rendered in the table's notation.
struct Declared {
    file: String,
    name: String,
    entries: Vec<String>,
    reserved: Vec<(i32, i32)>,
    numbers: Vec<i32>,
}

fn type_name(package: &str, qualified: &str) -> String {
    let name = qualified.trim_start_matches('.');
    name.strip_prefix(&format!("{package}."))
        .unwrap_or(name)
        .to_string()
}

fn scalar(t: Type) -> &'static str {
    match t {
        Type::Double => "double",
        Type::Float => "float",
        Type::Int64 => "int64",
        Type::Uint64 => "uint64",
        Type::Int32 => "int32",
        Type::Fixed64 => "fixed64",
        Type::Fixed32 => "fixed32",
        Type::Bool => "bool",
        Type::String => "string",
        Type::Bytes => "bytes",
        Type::Uint32 => "uint32",
        Type::Sfixed32 => "sfixed32",
        Type::Sfixed64 => "sfixed64",
        Type::Sint32 => "sint32",
        Type::Sint64 => "sint64",
        Type::Group | Type::Message | Type::Enum => "",
    }
}

fn walk_messages(
    file: &str,
    package: &str,
    prefix: &str,
    messages: &[DescriptorProto],
    enums_out: &mut Vec<Declared>,
    out: &mut Vec<Declared>,
) {
    for m in messages {
        if m.options.as_ref().is_some_and(|o| o.map_entry()) {
            continue;
        }
        let local = format!("{prefix}{}", m.name());
        let maps: BTreeMap<String, &DescriptorProto> = m
            .nested_type
            .iter()
            .filter(|n| n.options.as_ref().is_some_and(|o| o.map_entry()))
            .map(|n| (format!(".{package}.{local}.{}", n.name()), n))
            .collect();
        let render_type = |f: &prost_types::FieldDescriptorProto| match f.r#type() {
            Type::Message | Type::Enum | Type::Group => type_name(package, f.type_name()),
            t => scalar(t).to_string(),
        };
        let mut entries = Vec::new();
        for f in &m.field {
            let base = render_type(f);
            let rendered = if let Some(entry) = maps.get(f.type_name()) {
                format!(
                    "map<{},{}>",
                    render_type(&entry.field[0]),
                    render_type(&entry.field[1])
                )
            } else if f.label() == Label::Repeated {
                format!("repeated {base}")
            } else if f.proto3_optional() {
                format!("optional {base}")
            } else if let Some(i) = f.oneof_index {
                format!("{base}[oneof {}]", m.oneof_decl[i as usize].name())
            } else {
                base
            };
            entries.push(format!("{}={}:{rendered}", f.name(), f.number()));
        }
        out.push(Declared {
            file: file.to_string(),
            name: format!("{package}.{local}"),
            entries,
            reserved: m
                .reserved_range
                .iter()
                .map(|r| (r.start(), r.end()))
                .collect(),
            numbers: m.field.iter().map(|f| f.number()).collect(),
        });
        walk_enums(file, package, &format!("{local}."), &m.enum_type, enums_out);
        walk_messages(
            file,
            package,
            &format!("{local}."),
            &m.nested_type,
            enums_out,
            out,
        );
    }
}

fn walk_enums(
    file: &str,
    package: &str,
    prefix: &str,
    enums: &[EnumDescriptorProto],
    out: &mut Vec<Declared>,
) {
    for e in enums {
        out.push(Declared {
            file: file.to_string(),
            name: format!("{package}.{prefix}{}", e.name()),
            entries: e
                .value
                .iter()
                .map(|v| format!("{}={}", v.name(), v.number()))
                .collect(),
            reserved: Vec::new(),
            numbers: Vec::new(),
        });
    }
}

struct Declarations {
    messages: Vec<Declared>,
    enums: Vec<Declared>,
    services: Vec<Declared>,
}

fn declarations() -> Declarations {
    let set = FileDescriptorSet::decode(crate::cloud::proto::FILE_DESCRIPTOR_SET)
        .expect("descriptor set decodes");
    let mut d = Declarations {
        messages: Vec::new(),
        enums: Vec::new(),
        services: Vec::new(),
    };
    for file in set.file.iter().filter(|f| f.name().starts_with("nebius/")) {
        let package = file.package();
        walk_messages(
            file.name(),
            package,
            "",
            &file.message_type,
            &mut d.enums,
            &mut d.messages,
        );
        walk_enums(file.name(), package, "", &file.enum_type, &mut d.enums);
        for s in &file.service {
            d.services.push(Declared {
                file: file.name().to_string(),
                name: format!("{package}.{}", s.name()),
                entries: s
                    .method
                    .iter()
                    .map(|m| {
                        format!(
                            "{}({})→{}",
                            m.name(),
                            type_name(package, m.input_type()),
                            type_name(package, m.output_type())
                        )
                    })
                    .collect(),
                reserved: Vec::new(),
                numbers: Vec::new(),
            });
        }
    }
    d
}

/// The shapes the table leaves out (its preamble): what a standard request or response may hold.
fn standard_shape(name: &str, entry: &str, resources: &BTreeMap<String, String>) -> bool {
    static GET: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\.(Get|Delete|Purge|Undelete|Start|Stop|Activate|Deactivate)\w*Request$")
            .expect("static regex")
    });
    static BY_NAME: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\.Get\w*ByNameRequest$").expect("static regex"));
    static LIST_REQ: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\.List\w*Request$").expect("static regex"));
    static LIST_RESP: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\.List\w*Response$").expect("static regex"));
    static LIST_ITEMS: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^items=1:repeated [A-Za-z0-9_.]+$").expect("static regex"));
    static WRITE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\.(Create|Update)(\w*)Request$").expect("static regex"));
    static WRITE_SPEC: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^spec=2:([A-Za-z0-9_.]+)$").expect("static regex"));
    if BY_NAME.is_match(name) {
        return matches!(entry, "parent_id=1:string" | "name=2:string");
    }
    if GET.is_match(name) {
        return entry == "id=1:string";
    }
    if LIST_REQ.is_match(name) {
        return matches!(
            entry,
            "parent_id=1:string" | "page_size=2:int64" | "page_token=3:string" | "filter=4:string"
        );
    }
    if LIST_RESP.is_match(name) {
        return LIST_ITEMS.is_match(entry) || entry == "next_page_token=2:string";
    }
    if let Some(c) = WRITE.captures(name) {
        // A write carries the spec of the resource its service's `Get` returns
        // (`CreateProjectRequest` a `ContainerSpec`), else of the one it names.
        let resource = resources
            .get(name)
            .cloned()
            .unwrap_or_else(|| c[2].to_string());
        return entry == "metadata=1:nebius.common.v1.ResourceMetadata"
            || WRITE_SPEC
                .captures(entry)
                .is_some_and(|s| s[1].rsplit('.').next() == Some(&format!("{resource}Spec")));
    }
    false
}

/// Each `Create*`/`Update*Request` of the table's services (package-qualified) → the resource
/// type its service's `Get` returns (without package).
fn write_resources(table: &Table) -> BTreeMap<String, String> {
    static METHOD: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^(\w+)\(([\w.]+)\)→([\w.]+)$").expect("static regex"));
    let mut out = BTreeMap::new();
    for (service, methods) in &table.services {
        let package = service.rsplit_once('.').map_or("", |(p, _)| p);
        let parsed: Vec<(String, String, String)> = methods
            .iter()
            .filter_map(|m| METHOD.captures(m))
            .map(|c| (c[1].to_string(), c[2].to_string(), c[3].to_string()))
            .collect();
        let Some((_, _, got)) = parsed.iter().find(|(m, _, _)| m == "Get") else {
            continue;
        };
        let resource = got.rsplit('.').next().unwrap_or(got).to_string();
        for (method, request, _) in &parsed {
            if method == "Create" || method == "Update" {
                let request = if request.contains('.') {
                    request.clone()
                } else {
                    format!("{package}.{request}")
                };
                out.insert(request, resource.clone());
            }
        }
    }
    out
}

#[test]
fn every_declared_number_matches_the_upstream_table() {
    let table = parse_table(TABLE);
    let resources = write_resources(&table);
    let declared = declarations();
    let mut problems = Vec::new();
    let mut pinned = 0usize;
    let groups = [
        ("message", &declared.messages, &table.messages),
        ("enum", &declared.enums, &table.enums),
        ("service", &declared.services, &table.services),
    ];
    for (kind, items, upstream) in groups {
        for item in items.iter() {
            let left_out = LEFT_OUT.contains(&item.file.as_str());
            match upstream.get(&item.name) {
                Some(entries) => {
                    for e in &item.entries {
                        if entries.contains(e) {
                            pinned += 1;
                        } else {
                            problems.push(format!(
                                "{kind} {}: declares `{e}`; upstream has {{ {} }}",
                                item.name,
                                entries.iter().cloned().collect::<Vec<_>>().join("; ")
                            ));
                        }
                    }
                }
                None if left_out => {}
                None if kind == "message" => {
                    for e in &item.entries {
                        if standard_shape(&item.name, e, &resources) {
                            pinned += 1;
                        } else {
                            problems.push(format!(
                                "message {}: `{e}` is neither in the upstream table nor a standard shape",
                                item.name
                            ));
                        }
                    }
                }
                None => problems.push(format!(
                    "{kind} {} ({}) is not in the upstream table",
                    item.name, item.file
                )),
            }
        }
    }
    for (message, number, field) in &table.reserved {
        let Some(m) = declared.messages.iter().find(|m| &m.name == message) else {
            problems.push(format!("{message} (reserved {number}) is not declared"));
            continue;
        };
        if m.numbers.contains(number) {
            problems.push(format!(
                "{message}: field number {number} ({field}) was removed upstream and is reserved"
            ));
        }
        if !m.reserved.iter().any(|(s, e)| s <= number && number < e) {
            problems.push(format!(
                "{message}: declare `reserved {number};` ({field} was removed upstream)"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // Guards against a parser that silently matches nothing.
    assert!(pinned > 600, "only {pinned} entries pinned");
}

#[test]
fn storage_class_follows_the_newest_upstream() {
    use crate::cloud::proto::nebius::storage::v1::StorageClass;
    assert_eq!(StorageClass::Intelligent as i32, 3);
    assert_eq!(StorageClass::Intelligent.as_str_name(), "INTELLIGENT");
    assert_eq!(
        StorageClass::from_str_name("INTELLIGENT"),
        Some(StorageClass::Intelligent)
    );
    assert_eq!(StorageClass::from_str_name("INTELLIGENT_TIERING"), None);
}

#[test]
fn the_table_parser_reads_each_notation() {
    let t = parse_table(
        "## nebius/x/v1/a.proto (nebius.x.v1)\n  msg A { b=1:string; c=2:B[oneof d]; e=3:map<string,string> }\n  enum A.E { E_UNSPECIFIED=0, E_ONE=1 }\n  service S { Get(GetARequest)→A }\n  msg Empty { }\n## reserved\n  reserved nebius.x.v1.A 10 old\n",
    );
    assert_eq!(t.messages["nebius.x.v1.A"].len(), 3);
    assert!(t.messages["nebius.x.v1.A"].contains("c=2:B[oneof d]"));
    assert!(t.messages["nebius.x.v1.Empty"].is_empty());
    assert!(t.enums["nebius.x.v1.A.E"].contains("E_ONE=1"));
    assert!(t.services["nebius.x.v1.S"].contains("Get(GetARequest)→A"));
    assert_eq!(
        t.reserved,
        vec![("nebius.x.v1.A".to_string(), 10, "old".to_string())]
    );
}
