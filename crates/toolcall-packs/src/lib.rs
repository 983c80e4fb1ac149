//! Tool packs from the seed applications, one module per pack.
