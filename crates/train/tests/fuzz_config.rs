//! Property-based tests of the run-configuration parser: arbitrary text, and the quickstart
//! configuration with any key set to any value, never panic, and every refusal names the file
//! and, for a bad value, its key. Case count: 64, or `ROSETTA_FUZZ_CASES` (`scripts/fuzz.sh`).

use std::path::Path;

use proptest::prelude::*;
use rosetta_train::RunConfig;

fn cases() -> u32 {
    std::env::var("ROSETTA_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

fn quickstart() -> toml::Table {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/quickstart.toml");
    std::fs::read_to_string(path)
        .expect("quickstart")
        .parse()
        .expect("TOML")
}

/// Every `(section, key)` of the quickstart configuration, nested tables included.
fn keys() -> Vec<(String, String)> {
    fn walk(prefix: &str, table: &toml::Table, out: &mut Vec<(String, String)>) {
        for (key, value) in table {
            out.push((prefix.to_string(), key.clone()));
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
    let mut out = Vec::new();
    walk("", &quickstart(), &mut out);
    out
}

fn any_value() -> impl Strategy<Value = toml::Value> {
    let leaf = prop_oneof![
        any::<i64>().prop_map(toml::Value::Integer),
        prop_oneof![Just(0i64), Just(-1), Just(1), Just(i64::MAX)].prop_map(toml::Value::Integer),
        any::<f64>().prop_map(toml::Value::Float),
        prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(-0.5), Just(1e300)]
            .prop_map(toml::Value::Float),
        "[a-z_]{0,12}".prop_map(toml::Value::String),
        any::<bool>().prop_map(toml::Value::Boolean),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(toml::Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..3)
                .prop_map(|m| toml::Value::Table(m.into_iter().collect())),
        ]
    })
}

/// Parses `text` as `fuzz.toml` and, when it parses, builds the model configuration as a run
/// would; a refusal's message.
fn check(text: &str) -> Result<(), String> {
    let config = RunConfig::parse(text, Path::new("fuzz.toml")).map_err(|e| e.to_string())?;
    config.model_config(400, 400).map_err(|e| e.to_string())?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn arbitrary_text_is_refused_naming_the_file(text in any::<String>()) {
        if let Err(message) = check(&text) {
            prop_assert!(message.contains("fuzz.toml") || message.contains("[model]"), "{}", message);
        }
    }

    #[test]
    fn any_value_at_any_key_is_refused_naming_the_key(
        index in any::<prop::sample::Index>(),
        value in any_value(),
    ) {
        let keys = keys();
        let (section, key) = &keys[index.index(keys.len())];
        let mut table = quickstart();
        let mut target = &mut table;
        for part in section.split('.').filter(|p| !p.is_empty()) {
            target = target
                .get_mut(part)
                .and_then(toml::Value::as_table_mut)
                .expect("a table");
        }
        target.insert(key.clone(), value);
        let text = toml::to_string(&table).expect("serialize");
        if let Err(message) = check(&text) {
            // The key itself, or its full path. Inside the internally tagged tables
            // (`data.batch`, `training.schedule`) serde reports the table only: the table.
            let dotted = if section.is_empty() { key.clone() } else { format!("{section}.{key}") };
            let tagged = ["data.batch", "training.schedule"].contains(&section.as_str())
                && message.contains(&format!("`{section}`"));
            prop_assert!(
                message.contains(key.as_str()) || message.contains(&dotted) || tagged,
                "[{}] {} refused without naming it: {}", section, key, message
            );
        }
    }
}
