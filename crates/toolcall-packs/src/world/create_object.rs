//! `create_object`: a new object held by a player, location or object, with an id
//! `obj_{timestamp}_{random}`.

use std::time::{SystemTime, UNIX_EPOCH};

use rand::RngExt;
use serde_json::{Map, Value, json};
use toolcall_core::{StateTool, ToolAnnotations, ToolContext, ToolError, ToolOutput, ToolSpec};

use super::{MAX_ATTRIBUTES, MAX_ENTITIES, MAX_TEXT, Object, World, str_arg};

/// `create_object`, with its id source.
#[derive(Default)]
pub struct CreateObject {
    ids: std::sync::Mutex<IdSource>,
}

impl CreateObject {
    pub fn new(ids: IdSource) -> Self {
        CreateObject {
            ids: std::sync::Mutex::new(ids),
        }
    }

    fn next_id(&self) -> String {
        self.ids.lock().unwrap_or_else(|p| p.into_inner()).next_id()
    }
}

/// Where new object ids come from: the clock and a random suffix, or (for reproducible
/// sessions, pack option `"ids": {"timestamp": ms, "seed": n}`) a fixed timestamp and a
/// seeded sequence, so a recorded session can name the objects it creates.
#[derive(Debug, Clone, Default)]
pub enum IdSource {
    #[default]
    Random,
    Fixed {
        timestamp: u64,
        seed: u64,
        counter: u64,
    },
}

impl IdSource {
    pub fn next_id(&mut self) -> String {
        match self {
            IdSource::Random => new_object_id(),
            IdSource::Fixed {
                timestamp,
                seed,
                counter,
            } => {
                *counter += 1;
                let mut x = splitmix64(seed.wrapping_add(*counter));
                let mut suffix = String::with_capacity(6);
                for _ in 0..6 {
                    let digit = (x % 36) as u32;
                    suffix.push(char::from_digit(digit, 36).unwrap_or('x'));
                    x /= 36;
                }
                format!("obj_{timestamp}_{suffix}")
            }
        }
    }
}

/// SplitMix64: a well-mixed deterministic sequence from a counter.
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The attribute a new object gets when the call gives none.
pub const DEFAULT_CONDITION: &str = "in good condition";

/// `obj_{unix millis}_{6 random lowercase alphanumerics}`.
pub fn new_object_id() -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let mut rng = rand::rng();
    let suffix: String = (0..6)
        .map(|_| {
            let i = rng.random_range(0..ALPHABET.len());
            ALPHABET.get(i).copied().unwrap_or(b'x') as char
        })
        .collect();
    format!("obj_{millis}_{suffix}")
}

/// `attributes` as an object or a JSON string holding one; absent, null or empty → default.
fn attributes(args: &Value) -> Result<Map<String, Value>, ToolError> {
    let parsed = match args.get("attributes") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.trim().is_empty() => None,
        Some(Value::String(s)) => {
            if s.len() > MAX_TEXT * 16 {
                return Err(ToolError::failed("attributes string is too long"));
            }
            match serde_json::from_str::<Value>(s) {
                Ok(Value::Object(m)) => Some(m),
                Ok(other) => {
                    return Err(ToolError::failed(format!(
                        "attributes must be a JSON object, got {other}"
                    )));
                }
                Err(e) => {
                    return Err(ToolError::failed(format!(
                        "attributes is not valid JSON ({e}); expected e.g. {{\"condition\": \"full\"}}"
                    )));
                }
            }
        }
        Some(Value::Object(m)) => Some(m.clone()),
        Some(other) => {
            return Err(ToolError::failed(format!(
                "attributes must be an object or a JSON string, got {other}"
            )));
        }
    };
    let map = match parsed {
        Some(m) if !m.is_empty() => m,
        _ => {
            let mut m = Map::new();
            m.insert("condition".into(), json!(DEFAULT_CONDITION));
            m
        }
    };
    if map.len() > MAX_ATTRIBUTES {
        return Err(ToolError::failed(format!(
            "at most {MAX_ATTRIBUTES} attributes are allowed"
        )));
    }
    for (k, v) in &map {
        if k.is_empty() || k.len() > MAX_TEXT {
            return Err(ToolError::failed("attribute names must be 1 to 4096 bytes"));
        }
        if matches!(v, Value::Object(_) | Value::Array(_)) {
            return Err(ToolError::failed(format!(
                "attribute \"{k}\" must be a text, number or boolean, not a nested value"
            )));
        }
    }
    Ok(map)
}

impl StateTool<World> for CreateObject {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "create_object",
            "Create a new object held by a player, a location or another object.",
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "the object's name"},
                    "connectionId": {"type": "string", "description": "id of the player, location or object that holds it"},
                    "attributes": {
                        "type": ["object", "string"],
                        "description": "attributes as an object or a JSON string, e.g. {\"condition\": \"full\"}; default condition: in good condition"
                    }
                },
                "required": ["name", "connectionId"]
            }),
        )
        .with_annotations(ToolAnnotations {
            read_only: Some(false),
            destructive: Some(false),
            idempotent: Some(false),
        })
    }

    fn apply(&self, w: &mut World, _: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let name = str_arg(&args, "name")?;
        let holder = str_arg(&args, "connectionId")?;
        let attributes = attributes(&args)?;
        if w.kind_of(holder).is_none() {
            return Err(ToolError::failed(format!(
                "connectionId \"{holder}\" not found (no player, location or object has this id)"
            )));
        }
        if w.players.len() + w.locations.len() + w.objects.len() >= MAX_ENTITIES {
            return Err(ToolError::failed("the world is full"));
        }
        let mut id = self.next_id();
        let mut tries = 0;
        while w.kind_of(&id).is_some() {
            tries += 1;
            if tries > 1000 {
                return Err(ToolError::failed("could not find a free object id"));
            }
            id = self.next_id();
        }
        let sentence = format!(
            "Object \"{name}\" created with id \"{id}\", held by {}.",
            w.describe(holder)
        );
        w.objects.push(Object {
            id: id.clone(),
            name: name.to_owned(),
            holder: holder.to_owned(),
            attributes,
        });
        Ok(json!({"message": sentence, "objectId": id}).into())
    }
}
