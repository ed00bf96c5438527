//! The timeline as inline SVG: runs as bars on a time axis (the running one marked), and the
//! events around them (launches, installs, driver changes, unit edits, reboots, GPU faults) as
//! markers whose hover title is their evidence.

use std::fmt::Write;

use super::escape;

/// The drawing's width in SVG units (it scales to the page).
pub const WIDTH: f64 = 1000.0;
/// Room on the left for the run labels.
pub const LEFT: f64 = 170.0;
const RIGHT: f64 = 12.0;
const ROW: f64 = 20.0;
const MARK_LANE: f64 = 26.0;
const AXIS: f64 = 30.0;
/// Markers drawn at most (a host with years of history); the JSON keeps them all.
const MAX_MARKS: usize = 2_000;
/// Bars drawn at most: the newest.
const MAX_BARS: usize = 60;

/// A run of a server, `start..end` (end: the collection time while it runs).
#[derive(Debug, Clone)]
pub struct Bar {
    pub label: String,
    pub start: i64,
    pub end: i64,
    pub running: bool,
    /// The hover title: its evidence.
    pub title: String,
}

/// What a marker stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkKind {
    Launch,
    Install,
    Driver,
    Unit,
    HostChange,
    Reboot,
    Fault,
    PowerLimit,
    GpuObservation,
    Benchmark,
}

impl MarkKind {
    fn class(self) -> &'static str {
        match self {
            MarkKind::Launch => "launch",
            MarkKind::Install => "install",
            MarkKind::Driver => "driver",
            MarkKind::Unit => "unit",
            MarkKind::HostChange => "host",
            MarkKind::Reboot => "reboot",
            MarkKind::Fault => "fault",
            MarkKind::PowerLimit => "power",
            MarkKind::GpuObservation => "gpu",
            MarkKind::Benchmark => "bench",
        }
    }

    fn label(self) -> &'static str {
        match self {
            MarkKind::Launch => "launch",
            MarkKind::Install => "package install",
            MarkKind::Driver => "driver change",
            MarkKind::Unit => "unit edit",
            MarkKind::HostChange => "host change",
            MarkKind::Reboot => "reboot",
            MarkKind::Fault => "GPU fault",
            MarkKind::PowerLimit => "power limit",
            MarkKind::GpuObservation => "GPU observation",
            MarkKind::Benchmark => "benchmark result",
        }
    }
}

/// One event at one time.
#[derive(Debug, Clone)]
pub struct Mark {
    pub at: i64,
    pub kind: MarkKind,
    /// The hover title: its evidence.
    pub title: String,
}

/// Maps times to x positions between [`LEFT`] and the right edge.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    pub start: i64,
    pub end: i64,
}

impl Scale {
    /// The span of `times`, widened to an hour when they are one instant.
    pub fn of(times: impl IntoIterator<Item = i64>) -> Option<Scale> {
        let mut times = times.into_iter();
        let first = times.next()?;
        let (start, end) = times.fold((first, first), |(lo, hi), t| (lo.min(t), hi.max(t)));
        if end - start < 60 {
            return Some(Scale {
                start: start - 1800,
                end: end + 1800,
            });
        }
        Some(Scale { start, end })
    }

    pub fn x(&self, time: i64) -> f64 {
        let span = (self.end - self.start).max(1) as f64;
        let fraction = ((time - self.start) as f64 / span).clamp(0.0, 1.0);
        LEFT + fraction * (WIDTH - LEFT - RIGHT)
    }

    /// The axis line and five dated ticks, at `y`.
    pub fn axis(&self, out: &mut String, y: f64) {
        let _ = write!(
            out,
            "<line class=\"axis\" x1=\"{LEFT:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\"/>",
            WIDTH - RIGHT
        );
        let long = self.end - self.start > 3 * 86_400;
        for step in 0..5 {
            let time = self.start + (self.end - self.start) * step / 4;
            let x = self.x(time);
            let anchor = match step {
                0 => "start",
                4 => "end",
                _ => "middle",
            };
            let label = jiff::Timestamp::from_second(time)
                .map(|ts| {
                    ts.strftime(if long { "%Y-%m-%d" } else { "%m-%d %H:%M" })
                        .to_string()
                })
                .unwrap_or_default();
            let _ = write!(
                out,
                "<line class=\"axis\" x1=\"{x:.1}\" y1=\"{y:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\"/>\
                 <text class=\"tick\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\">{label}</text>",
                y + 4.0,
                y + 16.0
            );
        }
    }
}

/// The timeline drawing, or `None` when nothing in it has a time.
pub fn svg(bars: &[Bar], marks: &[Mark]) -> Option<String> {
    let bars = bars
        .get(bars.len().saturating_sub(MAX_BARS)..)
        .unwrap_or_default();
    let scale = Scale::of(
        bars.iter()
            .flat_map(|bar| [bar.start, bar.end])
            .chain(marks.iter().map(|mark| mark.at)),
    )?;
    let height = MARK_LANE + ROW * bars.len() as f64 + AXIS;
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg class=\"timeline\" viewBox=\"0 0 {WIDTH} {height:.0}\" role=\"img\" \
         aria-label=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\">"
    );
    let _ = write!(out, "<text class=\"tick\" x=\"4\" y=\"16\">events</text>");
    for (row, bar) in bars.iter().enumerate() {
        let y = MARK_LANE + ROW * row as f64;
        let x1 = scale.x(bar.start);
        let x2 = scale.x(bar.end).max(x1 + 2.0);
        let class = if bar.running { "run running" } else { "run" };
        let label = short_label(&bar.label);
        let _ = write!(
            out,
            "<g class=\"{class}-row\"><text x=\"4\" y=\"{:.1}\">{}{}</text>\
             <rect class=\"{class}\" x=\"{x1:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"2\">\
             <title>{}</title></rect></g>",
            y + 14.0,
            escape::text(&label),
            if bar.running { " (running)" } else { "" },
            y + 3.0,
            x2 - x1,
            ROW - 6.0,
            escape::text(&bar.title)
        );
    }
    let bottom = MARK_LANE + ROW * bars.len() as f64;
    for mark in marks.iter().take(MAX_MARKS) {
        let x = scale.x(mark.at);
        let class = mark.kind.class();
        let _ = write!(
            out,
            "<g class=\"mark mark-{class}\"><title>{}: {}</title>\
             <line class=\"mark mark-{class}\" x1=\"{x:.1}\" y1=\"6\" x2=\"{x:.1}\" y2=\"{bottom:.1}\" opacity=\"0.45\"/>\
             <circle class=\"mark mark-{class}\" cx=\"{x:.1}\" cy=\"12\" r=\"4\"/></g>",
            mark.kind.label(),
            escape::text(&mark.title)
        );
    }
    scale.axis(&mut out, bottom + 4.0);
    out.push_str("</svg>");
    Some(out)
}

/// The legend of the marker kinds present.
pub fn legend(marks: &[Mark]) -> String {
    let mut kinds: Vec<MarkKind> = Vec::new();
    for mark in marks {
        if !kinds.contains(&mark.kind) {
            kinds.push(mark.kind);
        }
    }
    let mut out = String::from(
        "<p class=\"legend\"><span><i class=\"swatch-run\" style=\"background:#9db7e0\"></i>run</span><span><i style=\"background:#2f5fb3\"></i>running run</span>",
    );
    for kind in kinds {
        let _ = write!(
            out,
            "<span class=\"legend-{}\">&#9679; {}</span>",
            kind.class(),
            kind.label()
        );
    }
    out.push_str("</p>");
    out
}

/// Row labels this many characters at most.
const LABEL_CHARS: usize = 28;

/// A row's label cut in the middle, so that what tells rows apart (`#57`, a pid, a container's
/// tag) at the end stays: `history:/root/.bas…history#57`.
fn short_label(label: &str) -> String {
    let chars: Vec<char> = label.chars().collect();
    if chars.len() <= LABEL_CHARS {
        return label.to_string();
    }
    let tail = LABEL_CHARS / 2;
    let head = LABEL_CHARS - tail - 1;
    let mut out: String = chars[..head].iter().collect();
    out.push('\u{2026}');
    out.extend(&chars[chars.len() - tail..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_labels_keep_their_ends() {
        for (label, shown) in [
            ("pid:34", "pid:34"),
            (
                "history:/root/.bash_history#2",
                "history:/root\u{2026}bash_history#2",
            ),
            (
                "container:vllm-llama-v0102-canary",
                "container:vll\u{2026}a-v0102-canary",
            ),
        ] {
            assert_eq!(short_label(label), shown, "{label}");
            assert!(short_label(label).chars().count() <= LABEL_CHARS);
        }
    }

    #[test]
    fn bars_and_marks_are_drawn_with_their_titles_as_text() {
        let bars = [
            Bar {
                label: "pid:1".into(),
                start: 1_000,
                end: 5_000,
                running: false,
                title: "process start".into(),
            },
            Bar {
                label: "<b>unit</b>".into(),
                start: 6_000,
                end: 9_000,
                running: true,
                title: "journal".into(),
            },
        ];
        let marks = [Mark {
            at: 5_500,
            kind: MarkKind::Fault,
            title: "Xid 79 <img src=x onerror=alert(1)>".into(),
        }];
        let svg = svg(&bars, &marks).unwrap();
        assert!(svg.contains("class=\"run running\""), "{svg}");
        assert!(svg.contains("mark mark-fault"), "{svg}");
        assert!(
            svg.contains("Xid 79 &lt;img src=x onerror=alert(1)&gt;"),
            "{svg}"
        );
        assert!(!svg.contains("<b>"), "{svg}");
        assert!(super::svg(&[], &[]).is_none());
    }

    #[test]
    fn scale_maps_the_span_onto_the_drawing() {
        let scale = Scale::of([100, 200]).unwrap();
        assert_eq!(scale.x(100), LEFT);
        assert_eq!(scale.x(200), WIDTH - RIGHT);
        assert_eq!(scale.x(10_000), WIDTH - RIGHT);
        let instant = Scale::of([500]).unwrap();
        assert!(instant.start < 500 && instant.end > 500);
    }
}
