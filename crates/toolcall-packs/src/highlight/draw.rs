//! Draws the chosen box onto the picture and writes a PNG a person can look at.

use std::path::Path;

use image::{ImageFormat, ImageReader, Limits, Rgba, RgbaImage};

use super::PixelBox;

/// The highlight colour (opaque red).
pub const COLOUR: Rgba<u8> = Rgba([255, 0, 0, 255]);
/// Largest picture accepted, per side.
pub const MAX_SIDE: u32 = 16_384;

#[derive(Debug, thiserror::Error)]
pub enum DrawError {
    #[error("cannot read image {path}: {message}")]
    Read { path: String, message: String },
    #[error("cannot write image {path}: {message}")]
    Write { path: String, message: String },
}

/// Width and height of an image without decoding its pixels.
pub fn dimensions(path: &Path) -> Result<(u32, u32), DrawError> {
    let read = |message: String| DrawError::Read {
        path: path.display().to_string(),
        message,
    };
    ImageReader::open(path)
        .map_err(|e| read(e.to_string()))?
        .with_guessed_format()
        .map_err(|e| read(e.to_string()))?
        .into_dimensions()
        .map_err(|e| read(e.to_string()))
}

/// Line width for a picture: thin on small pictures, visible on big ones.
pub fn thickness(width: u32, height: u32) -> u32 {
    (width.min(height) / 200).clamp(2, 12)
}

/// Draws `b`'s outline (inside the box) in [`COLOUR`] on `img`.
pub fn outline(img: &mut RgbaImage, b: PixelBox, t: u32) {
    let (w, h) = img.dimensions();
    if w == 0 || h == 0 {
        return;
    }
    let x1 = b.x1.min(w - 1);
    let y1 = b.y1.min(h - 1);
    for y in b.y0..=y1 {
        for x in b.x0..=x1 {
            let on_border = x < b.x0.saturating_add(t)
                || y < b.y0.saturating_add(t)
                || x.saturating_add(t) > x1
                || y.saturating_add(t) > y1;
            if on_border {
                img.put_pixel(x, y, COLOUR);
            }
        }
    }
}

/// Reads `input`, draws the box, writes a PNG to `output`.
pub fn highlight_file(input: &Path, output: &Path, b: PixelBox) -> Result<(), DrawError> {
    let read = |message: String| DrawError::Read {
        path: input.display().to_string(),
        message,
    };
    let mut reader = ImageReader::open(input)
        .map_err(|e| read(e.to_string()))?
        .with_guessed_format()
        .map_err(|e| read(e.to_string()))?;
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    reader.limits(limits);
    let mut img = reader.decode().map_err(|e| read(e.to_string()))?.to_rgba8();
    let (w, h) = img.dimensions();
    outline(&mut img, b, thickness(w, h));
    img.save_with_format(output, ImageFormat::Png)
        .map_err(|e| DrawError::Write {
            path: output.display().to_string(),
            message: e.to_string(),
        })
}
