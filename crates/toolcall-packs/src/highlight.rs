//! The `highlight` pack (skeleton: its issue replaces this file or turns it into a folder).

use crate::{Pack, PackConfig, PackError};

pub fn pack(_config: &PackConfig) -> Result<Pack, PackError> {
    Err(PackError::Config {
        pack: "highlight".into(),
        message: "not built yet".into(),
    })
}
