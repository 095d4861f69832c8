//! One `--format` for every command (issue 53): `table` (the terminal), `json`, and where a
//! command has them `csv` (report) and `html` (diff). Each command accepts the values it can
//! write and clap lists them in its `--help`; `--json` stays an alias of `--format json` where
//! it was (`project`, `peak`), and `terminal` of `table` where it was a value (`project`).

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Format {
    Table,
    Json,
    Csv,
    Html,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Html => "html",
        }
    }

    /// A `--format` parser that takes the values of `allowed` only (`table` also as
    /// `terminal`, its earlier name in `project`).
    pub fn only(allowed: &'static [Format]) -> impl TypedValueParser<Value = Format> {
        PossibleValuesParser::new(allowed.iter().map(|f| {
            let v = PossibleValue::new(f.name());
            if *f == Format::Table {
                v.alias("terminal")
            } else {
                v
            }
        }))
        // The parser hands the value as typed: an alias is its own string.
        .map(|name| match name.as_str() {
            "json" => Format::Json,
            "csv" => Format::Csv,
            "html" => Format::Html,
            _ => Format::Table,
        })
    }

    /// `--format`, with `json` (a command's `--json` flag) as an alias of `--format json`.
    pub fn or_json(self, json: bool) -> Format {
        if json {
            Format::Json
        } else {
            self
        }
    }
}
