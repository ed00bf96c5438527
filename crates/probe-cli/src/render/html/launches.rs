//! The launches side by side: one column per launch (running ones first), one row per field
//! and option, the rows whose values differ highlighted.

use std::collections::BTreeSet;

use probe_model::LaunchConfig;

use super::escape;

/// Launches shown side by side (the JSON has them all).
pub const MAX_COLUMNS: usize = 6;

/// The table, or an empty string when there is no launch.
pub fn side_by_side(launches: &[&LaunchConfig]) -> String {
    let launches: Vec<&LaunchConfig> = launches.iter().copied().take(MAX_COLUMNS).collect();
    if launches.is_empty() {
        return String::new();
    }
    let mut rows: Vec<(String, Vec<String>)> = vec![
        (
            "engine".into(),
            launches.iter().map(|l| l.engine.to_string()).collect(),
        ),
        (
            "version".into(),
            launches
                .iter()
                .map(|l| l.engine_version.clone().unwrap_or_default())
                .collect(),
        ),
        (
            "model".into(),
            launches
                .iter()
                .map(|l| l.model.clone().unwrap_or_default())
                .collect(),
        ),
    ];
    let names: BTreeSet<&String> = launches.iter().flat_map(|l| l.options.keys()).collect();
    for name in names {
        rows.push((
            name.clone(),
            launches
                .iter()
                .map(|l| {
                    l.options
                        .get(name)
                        .map(|option| option.written.clone())
                        .unwrap_or_default()
                })
                .collect(),
        ));
    }
    let mut out =
        String::from("<div class=\"scroll\"><table class=\"launches\"><thead><tr><th></th>");
    for launch in &launches {
        out.push_str(&format!(
            "<th>{}{}</th>",
            escape::text(&crate::render::launch::source_label(launch)),
            if launch.source.running {
                " <span class=\"good\">(running)</span>"
            } else {
                ""
            }
        ));
    }
    out.push_str("</tr></thead><tbody>");
    for (name, values) in rows {
        let differs = values.iter().any(|value| value != &values[0]);
        let cell = if differs {
            "<td class=\"differs\">"
        } else {
            "<td>"
        };
        out.push_str(&format!("<tr><th>{}</th>", escape::text(&name)));
        for value in values {
            out.push_str(cell);
            out.push_str(&escape::text(&value));
            out.push_str("</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>\n");
    out
}
