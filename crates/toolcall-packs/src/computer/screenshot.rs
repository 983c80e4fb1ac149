//! Screenshots for the model: scale the real screen to the model's size, encode PNG, wrap it
//! as `{"type":"image","media_type":"image/png","data":<base64>}`; and the coordinate
//! scaling between the model's screen and the real one.

use base64::Engine as _;
use image::imageops::{FilterType, resize};
use serde_json::{Value, json};

use super::display::Rgb;

/// Scales `img` to `width` × `height` with a triangle (bilinear) filter whose support
/// widens with the reduction, so downscaling averages the covered area.
pub fn scale(img: Rgb, width: u32, height: u32) -> Result<Rgb, String> {
    if img.width == width && img.height == height {
        return Ok(img);
    }
    let (w, h) = (img.width, img.height);
    let buf = image::RgbImage::from_raw(w, h, img.data)
        .ok_or_else(|| format!("screen image is not {w}x{h} RGB"))?;
    let out = resize(&buf, width, height, FilterType::Triangle);
    Ok(Rgb {
        width,
        height,
        data: out.into_raw(),
    })
}

/// Encodes RGB as PNG (fast deflate: screenshots are sent once, size matters less than time).
pub fn encode_png(img: &Rgb) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, img.width, img.height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Fast);
        let mut writer = enc.write_header().map_err(|e| e.to_string())?;
        writer
            .write_image_data(&img.data)
            .map_err(|e| e.to_string())?;
        writer.finish().map_err(|e| e.to_string())?;
    }
    Ok(out)
}

/// The image content block a screenshot result carries.
pub fn image_block(png: &[u8]) -> Value {
    json!({
        "type": "image",
        "media_type": "image/png",
        "data": base64::engine::general_purpose::STANDARD.encode(png),
    })
}

/// Maps a coordinate from a `from`-pixel axis onto a `to`-pixel axis, rounding to nearest
/// and staying inside `0..to`.
pub fn scale_axis(v: u32, from: u32, to: u32) -> u32 {
    if from == to || from == 0 {
        return v.min(to.saturating_sub(1));
    }
    let scaled = (u64::from(v) * u64::from(to) + u64::from(from) / 2) / u64::from(from);
    u32::try_from(scaled)
        .unwrap_or(u32::MAX)
        .min(to.saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    // covers P-CU
    #[test]
    fn axis_scaling_both_ways() {
        assert_eq!(scale_axis(512, 1024, 1280), 640);
        assert_eq!(scale_axis(384, 768, 800), 400);
        assert_eq!(scale_axis(640, 1280, 1024), 512);
        assert_eq!(scale_axis(400, 800, 768), 384);
        assert_eq!(scale_axis(1023, 1024, 1280), 1279);
        assert_eq!(scale_axis(0, 1024, 1280), 0);
        assert_eq!(scale_axis(1023, 1024, 1024), 1023);
    }

    // covers P-CU
    #[test]
    fn downscale_averages_and_png_round_trips() {
        // Left half red, right half blue, 8x4 → 4x2.
        let mut data = Vec::new();
        for _y in 0..4 {
            for x in 0..8 {
                data.extend_from_slice(if x < 4 { &[255, 0, 0] } else { &[0, 0, 255] });
            }
        }
        let small = scale(
            Rgb {
                width: 8,
                height: 4,
                data,
            },
            4,
            2,
        )
        .unwrap();
        assert_eq!((small.width, small.height), (4, 2));
        assert_eq!(&small.data[0..3], &[255, 0, 0]);
        assert_eq!(&small.data[9..12], &[0, 0, 255]);
        let png = encode_png(&small).unwrap();
        let decoded = image::load_from_memory(&png).unwrap().to_rgb8();
        assert_eq!(decoded.dimensions(), (4, 2));
        assert_eq!(decoded.into_raw(), small.data);
        let block = image_block(&png);
        assert_eq!(block["type"], "image");
        assert_eq!(block["media_type"], "image/png");
    }
}
