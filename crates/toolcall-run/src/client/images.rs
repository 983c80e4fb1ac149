//! Images inside tool results (`{"type":"image","media_type":"image/png","data":<base64>}`).
//!
//! Chat-style providers should not receive megabytes of base64 inside a tool message: the
//! image data is replaced by a short placeholder there and the image is attached to a
//! following user message instead.

use serde_json::Value;

/// Nesting depth searched for images.
const MAX_DEPTH: usize = 16;

/// One image taken out of a result.
#[derive(Debug, Clone, PartialEq)]
pub struct Image {
    pub media_type: String,
    /// Base64 data, as the tool produced it.
    pub data: String,
}

impl Image {
    pub fn data_uri(&self) -> String {
        format!("data:{};base64,{}", self.media_type, self.data)
    }

    /// The image as a tool result carries it (what [`find_images`] finds).
    pub fn to_value(&self) -> Value {
        serde_json::json!({"type": "image", "media_type": self.media_type, "data": self.data})
    }
}

fn as_image(v: &Value) -> Option<Image> {
    let obj = v.as_object()?;
    if obj.get("type")?.as_str()? != "image" {
        return None;
    }
    Some(Image {
        media_type: obj
            .get("media_type")
            .and_then(Value::as_str)
            .unwrap_or("image/png")
            .to_owned(),
        data: obj.get("data")?.as_str()?.to_owned(),
    })
}

/// Every image in `value`, in document order (bounded depth).
pub fn find_images(value: &Value) -> Vec<Image> {
    let mut out = Vec::new();
    walk(value, 0, &mut |v| {
        if let Some(img) = as_image(v) {
            out.push(img);
            true
        } else {
            false
        }
    });
    out
}

/// Replaces each image's data in `value` with a placeholder and returns the images.
pub fn take_images(value: &mut Value) -> Vec<Image> {
    take_images_noting(value, &|img| {
        format!(
            "[{} image, {} base64 bytes, attached in the next message]",
            img.media_type,
            img.data.len()
        )
    })
}

/// [`take_images`] with the placeholder written by `note` (where the image went).
pub fn take_images_noting(value: &mut Value, note: &dyn Fn(&Image) -> String) -> Vec<Image> {
    let mut out = Vec::new();
    walk_mut(value, 0, note, &mut out);
    out
}

fn walk(value: &Value, depth: usize, f: &mut dyn FnMut(&Value) -> bool) {
    if depth > MAX_DEPTH || f(value) {
        return;
    }
    match value {
        Value::Object(m) => m.values().for_each(|v| walk(v, depth + 1, f)),
        Value::Array(a) => a.iter().for_each(|v| walk(v, depth + 1, f)),
        _ => {}
    }
}

fn walk_mut(
    value: &mut Value,
    depth: usize,
    note: &dyn Fn(&Image) -> String,
    out: &mut Vec<Image>,
) {
    if depth > MAX_DEPTH {
        return;
    }
    if let Some(img) = as_image(value) {
        if let Some(obj) = value.as_object_mut() {
            obj.insert("data".into(), Value::String(note(&img)));
        }
        out.push(img);
        return;
    }
    match value {
        Value::Object(m) => m
            .values_mut()
            .for_each(|v| walk_mut(v, depth + 1, note, out)),
        Value::Array(a) => a.iter_mut().for_each(|v| walk_mut(v, depth + 1, note, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn images_are_replaced_by_placeholders() {
        let mut v = json!({"status":"ok","data":{"shot":{"type":"image","media_type":"image/png","data":"QUJD"},"w":1}});
        assert_eq!(find_images(&v).len(), 1);
        let imgs = take_images(&mut v);
        assert_eq!(imgs[0].data, "QUJD");
        assert_eq!(imgs[0].data_uri(), "data:image/png;base64,QUJD");
        assert!(
            v["data"]["shot"]["data"]
                .as_str()
                .unwrap()
                .contains("attached")
        );
        assert!(find_images(&json!({"type":"image"})).is_empty());
    }
}
