//! Avro's Parsing Canonical Form of the records sleet accepts: full name first, then the
//! fields in order, each type in its simplest spelling, nothing a reader does not need
//! (no `doc`, `default`, `aliases`, `logicalType`, `namespace`), no whitespace.

use crate::schema::FieldSchema;

/// Names were checked to be `[A-Za-z_][A-Za-z0-9_.]*` and types are primitive names, so
/// nothing written here needs JSON escaping.
pub(crate) fn parsing_canonical_form(full_name: &str, fields: &[FieldSchema]) -> String {
    let mut form = format!(r#"{{"name":"{full_name}","type":"record","fields":["#);
    for (index, field) in fields.iter().enumerate() {
        if index > 0 {
            form.push(',');
        }
        let name = field.avro_type.name();
        let type_json = match field.null_branch {
            None => format!(r#""{name}""#),
            Some(0) => format!(r#"["null","{name}"]"#),
            Some(_) => format!(r#"["{name}","null"]"#),
        };
        form.push_str(&format!(r#"{{"name":"{}","type":{type_json}}}"#, field.name));
    }
    form.push_str("]}");
    form
}
