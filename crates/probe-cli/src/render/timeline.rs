//! The document of `probe timeline`: what changed on a host, in order.

use probe_model::{Timeline, TimelineEvent};

use super::doc::{Doc, Tone};
use super::format_time;

/// A host's launch timeline, oldest first.
pub fn timeline_doc(timeline: &Timeline) -> Doc {
    let mut doc = Doc::default();
    doc.heading(1, format!("probe timeline: {}", timeline.host));
    if timeline.events.is_empty() {
        doc.line(Tone::Dim, "no launches or installs found");
        return doc;
    }
    if let Some(offset) = timeline.host_clock_offset_s {
        doc.line(Tone::Warn, clock_warning(offset));
    }
    doc.table(
        ["time", "order", "event", "", "what"]
            .map(String::from)
            .to_vec(),
        timeline.events.iter().map(event_row).collect(),
    );
    let evidence = evidence_items(timeline);
    if !evidence.is_empty() {
        doc.heading(2, "Evidence of engines installed outside package managers");
        doc.items(evidence);
    }
    doc
}

/// What the times are where the host's clock was `offset` seconds off this machine's.
fn clock_warning(offset: i64) -> String {
    format!(
        "times are the host's: its clock was {} {} this machine's at collection; \
         \"here\" is the same time on this machine's clock, right if the clock was as \
         far off when the event was written",
        crate::report::duration(offset.abs()),
        if offset > 0 { "ahead of" } else { "behind" }
    )
}

/// One event's row: time (and the same time here), order, kind, running or previous, what.
fn event_row(event: &TimelineEvent) -> (Tone, Vec<String>) {
    let mut when = bounds_text(&event.time);
    if let Some(here) = &event.corrected_time {
        when.push_str(&format!(" (here {})", bounds_text(here)));
    }
    let mark = if event.running {
        "running"
    } else if event.previous {
        "previous"
    } else {
        ""
    };
    let kind = serde_json::to_value(event.kind)
        .ok()
        .and_then(|v| v.as_str().map(|s| s.replace('_', " ")))
        .unwrap_or_default();
    let confidence = serde_json::to_value(event.confidence)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    (
        if event.running {
            Tone::Good
        } else if event.previous {
            Tone::Warn
        } else {
            Tone::Plain
        },
        vec![
            when,
            confidence,
            kind,
            mark.to_string(),
            event.summary.clone(),
        ],
    )
}

/// Self-installed engines' events: what each is known from.
fn evidence_items(timeline: &Timeline) -> Vec<(u8, Tone, String)> {
    timeline
        .events
        .iter()
        .filter(|event| !event.evidence.is_empty())
        .flat_map(|event| {
            std::iter::once((
                0,
                Tone::Plain,
                format!("{} {}", bounds_text(&event.time), event.summary),
            ))
            .chain(
                event
                    .evidence
                    .iter()
                    .map(|line| (1, Tone::Plain, line.clone())),
            )
        })
        .collect()
}

/// An event's time: exact, else its bounds, else `?`.
fn bounds_text(time: &probe_model::TimeBounds) -> String {
    time.at
        .map(format_time)
        .or_else(|| time.not_after.map(|t| format!("<= {}", format_time(t))))
        .or_else(|| time.not_before.map(|t| format!(">= {}", format_time(t))))
        .unwrap_or_else(|| "?".into())
}
