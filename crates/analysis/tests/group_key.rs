//! `--by` keys: verbose_converter's names (its `-k` list) parse to the key that prints them back,
//! and anything else is a typed error that lists the names to use.

use profilednn_analysis::{GroupKey, UnknownGroupKey};

#[test]
fn converter_names_round_trip_and_unknown_keys_list_the_valid_ones() {
    for name in [
        "engine",
        "prim_kind",
        "impl",
        "prop_kind",
        "mds",
        "exts",
        "aux",
        "shapes",
        "dtype",
    ] {
        assert_eq!(name.parse::<GroupKey>().unwrap().name(), name);
    }
    assert_eq!("direction".parse::<GroupKey>(), Ok(GroupKey::PropKind));
    let e = "colour".parse::<GroupKey>().unwrap_err();
    assert_eq!(e, UnknownGroupKey("colour".into()));
    assert!(e.to_string().contains("expected one of engine, prim_kind"));
}
