//! "Server says": what each running server reported about itself, next to its launch.

use probe_model::{EffectiveKind, EffectiveValue, ServerStatus, ServerView};

use super::doc::{Doc, Tone};
use super::format_value;

fn kind_label(kind: EffectiveKind) -> &'static str {
    match kind {
        EffectiveKind::Differs => "differs from launch",
        EffectiveKind::Resolved => "resolved by the engine",
        EffectiveKind::NotInLaunch => "not in any launch text",
    }
}

fn number(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn status_line(view: &ServerView) -> (Tone, String) {
    let r = &view.reading;
    let tone = match r.status {
        ServerStatus::Answered => Tone::Plain,
        ServerStatus::Partial | ServerStatus::NotAsked | ServerStatus::NeedsAuthentication => {
            Tone::Warn
        }
        _ => Tone::Bad,
    };
    let mut line = format!(
        "{} at {} ({}): {}",
        r.engine,
        r.address,
        r.launch,
        r.status.as_str()
    );
    if let Some(v) = &r.version {
        line.push_str(&format!(", version {v}"));
    }
    if let Some(u) = r.uptime_s {
        line.push_str(&format!(", up {u} s"));
    }
    if let Some(m) = r.message.as_deref().filter(|m| !m.is_empty()) {
        line.push_str(&format!(" ({m})"));
    }
    (tone, line)
}

fn performance(view: &ServerView, items: &mut Vec<(u8, Tone, String)>) {
    for v in &view.reading.lifetime {
        items.push((
            1,
            Tone::Plain,
            format!(
                "lifetime {}: {} {} [{}]",
                v.name,
                number(v.value),
                v.unit,
                v.source
            ),
        ));
    }
    for m in view
        .reading
        .metrics
        .iter()
        .filter(|m| m.kind == probe_model::ServerMetricKind::Gauge)
    {
        items.push((
            1,
            Tone::Plain,
            format!("now {}: {} [{}]", m.name, number(m.value), m.source),
        ));
    }
}

fn effective(view: &ServerView, items: &mut Vec<(u8, Tone, String)>) {
    for e in &view.effective {
        let tone = if e.kind == EffectiveKind::Differs {
            Tone::Warn
        } else {
            Tone::Plain
        };
        let declared = e
            .declared
            .as_ref()
            .map(|d| format!(" (launch: {})", format_value(d)))
            .unwrap_or_default();
        items.push((
            1,
            tone,
            format!(
                "{}: {}{declared}, {}",
                e.key,
                format_value(&e.effective),
                kind_label(e.kind)
            ),
        ));
    }
}

/// Effective values shown on a run's line, at most.
const MAX_EFFECTIVE_ON_RUN: usize = 6;

/// `mem-fraction-static 0.8 (launch 0.85), max_total_num_tokens 1286144 (resolved), +3 more`:
/// the differing values first.
pub(super) fn effective_summary(values: &[EffectiveValue]) -> Option<String> {
    let mut sorted: Vec<&EffectiveValue> = values.iter().collect();
    sorted.sort_by_key(|e| e.kind != EffectiveKind::Differs);
    let parts: Vec<String> = (sorted.iter())
        .map(|e| {
            let how = match (&e.declared, e.kind) {
                (Some(d), _) => format!("launch {}", format_value(d)),
                (None, EffectiveKind::Resolved) => String::from("resolved"),
                (None, _) => String::from("not in the launch"),
            };
            format!("{} {} ({how})", e.key, format_value(&e.effective))
        })
        .collect();
    (!parts.is_empty()).then(|| probe_model::text::join_capped(&parts, MAX_EFFECTIVE_ON_RUN, ", "))
}

/// The "Server says" section of a host report; nothing when no server was asked.
pub fn server_section(doc: &mut Doc, views: &[ServerView]) {
    if views.is_empty() {
        return;
    }
    doc.heading(2, "Server says");
    let mut items = Vec::new();
    for view in views {
        let (tone, line) = status_line(view);
        items.push((0, tone, line));
        for f in &view.findings {
            let tone = if f.severity == "high" {
                Tone::Bad
            } else {
                Tone::Warn
            };
            items.push((
                1,
                tone,
                format!("{} [{}]: {}", f.severity.to_uppercase(), f.rule, f.message),
            ));
        }
        effective(view, &mut items);
        performance(view, &mut items);
    }
    doc.items(items);
}
