//! `docs/configuration.md` is checked against the configuration structs: every key it documents
//! is one the parser accepts in that section, and every key of a resolved configuration (and
//! every field of the model section) is documented.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rosetta_train::model_section::TOKENIZER_KEYS;
use rosetta_train::{ModelSection, RunConfig};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `section -> keys` of the reference: each `### [section]` heading, then the first cell of
/// each table row below it.
fn documented() -> BTreeMap<String, BTreeSet<String>> {
    let text =
        std::fs::read_to_string(repo().join("docs/configuration.md")).expect("the reference");
    let mut sections: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("### [").and_then(|l| l.strip_suffix(']')) {
            current = Some(name.to_string());
            sections.entry(name.to_string()).or_default();
        } else if line.starts_with("## ") {
            current = None;
        } else if let (Some(section), Some(rest)) = (&current, line.strip_prefix("| `")) {
            let key = rest.split('`').next().expect("a key");
            sections
                .get_mut(section)
                .expect("section")
                .insert(key.to_string());
        }
    }
    sections
}

/// The quickstart configuration as a TOML table.
fn quickstart() -> toml::Table {
    let text = std::fs::read_to_string(repo().join("configs/quickstart.toml")).expect("quickstart");
    text.parse().expect("valid TOML")
}

/// The table at dotted `section` of `table`, created if missing.
fn section_mut<'a>(table: &'a mut toml::Table, section: &str) -> &'a mut toml::Table {
    let mut current = table;
    for part in section.split('.') {
        current = current
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .unwrap_or_else(|| panic!("`{section}` is not a table in the quickstart config"));
    }
    current
}

/// The tags of the sections that are internally tagged enums: a key of one variant is accepted
/// only with that variant's tag.
const TAGGED: [(&str, &str, &[&str]); 2] = [
    ("data.batch", "by", &["tokens", "sentences"]),
    (
        "training.schedule",
        "kind",
        &["noam", "inverse_sqrt", "cosine"],
    ),
];

/// Whether the parser accepts `key` in `section` (under some variant's tag, for a tagged
/// section).
fn accepted(section: &str, key: &str) -> bool {
    match TAGGED.iter().find(|(name, _, _)| *name == section) {
        Some((_, tag, variants)) => variants
            .iter()
            .any(|variant| accepted_with(section, key, Some((tag, variant)))),
        None => accepted_with(section, key, None),
    }
}

/// Whether the parser accepts `key` in `section`: set to a value of a type no key has (a table
/// holding an unknown key), the error is about its value, not about `key` being unknown.
fn accepted_with(section: &str, key: &str, tag: Option<(&str, &str)>) -> bool {
    // What the tokenizer decides is refused in `[model]` with its own message (any value but a
    // `pad_id` of 0): not a key of the section.
    if section == "model" && TOKENIZER_KEYS.contains(&key) {
        return false;
    }
    let mut table = quickstart();
    let mut probe = toml::Table::new();
    probe.insert("rosetta_probe".into(), toml::Value::Boolean(true));
    let target = section_mut(&mut table, section);
    if let Some((tag, variant)) = tag {
        target.clear();
        target.insert(tag.to_string(), toml::Value::String(variant.to_string()));
    }
    target.insert(key.to_string(), toml::Value::Table(probe));
    let text = toml::to_string(&table).expect("serialize");
    let path = Path::new("probe.toml");
    let message = match RunConfig::parse(&text, path) {
        Err(e) => e.to_string(),
        Ok(_) => return true,
    };
    !message.contains(&format!("unknown field `{key}`"))
}

/// `section -> keys` of the resolved quickstart configuration (what `config.toml` holds).
fn resolved() -> BTreeMap<String, BTreeSet<String>> {
    let config = RunConfig::parse(
        &toml::to_string(&quickstart()).expect("serialize"),
        Path::new("quickstart.toml"),
    )
    .expect("quickstart parses");
    let table: toml::Table = config.to_toml().expect("to TOML").parse().expect("TOML");
    let mut out = BTreeMap::new();
    fn walk(prefix: &str, table: &toml::Table, out: &mut BTreeMap<String, BTreeSet<String>>) {
        for (key, value) in table {
            if !prefix.is_empty() {
                out.entry(prefix.to_string())
                    .or_default()
                    .insert(key.clone());
            }
            if let toml::Value::Table(inner) = value {
                let name = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                walk(&name, inner, out);
            }
        }
    }
    walk("", &table, &mut out);
    out
}

#[test]
fn every_documented_key_is_accepted_in_its_section() {
    let documented = documented();
    assert!(
        documented.len() >= 8,
        "sections found: {:?}",
        documented.keys()
    );
    let mut wrong = Vec::new();
    for (section, keys) in &documented {
        for key in keys {
            if !accepted(section, key) {
                wrong.push(format!("[{section}] {key}"));
            }
        }
    }
    assert!(wrong.is_empty(), "documented but not accepted: {wrong:?}");
}

#[test]
fn every_resolved_key_and_model_field_is_documented() {
    let documented = documented();
    let mut missing = Vec::new();
    for (section, keys) in resolved() {
        if section == "model" {
            continue;
        }
        for key in keys {
            if !documented.get(&section).is_some_and(|d| d.contains(&key)) {
                missing.push(format!("[{section}] {key}"));
            }
        }
    }
    // Every field of the section, those unset by default included (`[model.embeddings]` is a
    // section of its own).
    let fields = serde_json::to_value(ModelSection::default()).expect("json");
    for key in fields.as_object().expect("object").keys() {
        if key == "embeddings" {
            continue;
        }
        if !documented.get("model").is_some_and(|d| d.contains(key)) {
            missing.push(format!("[model] {key}"));
        }
    }
    assert!(
        missing.is_empty(),
        "accepted but not documented: {missing:?}"
    );
}

#[test]
fn the_probe_tells_an_unknown_key_from_a_known_one() {
    // The check above would pass vacuously if every key looked accepted.
    assert!(!accepted("training", "no_such_key"));
    assert!(!accepted("data", "no_such_key"));
    assert!(!accepted("model", "no_such_key"));
    assert!(!accepted("data.batch", "no_such_key"));
    assert!(accepted("training", "max_steps"));
    assert!(accepted("model", "d_model"));
    assert!(accepted("data.batch", "sentences"));
}
