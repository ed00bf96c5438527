//! nvidia-smi's CSV (`--format=csv,nounits`): the header found past any error lines before it,
//! cells by header name, "[N/A]"-like cells as absent. Shared by the GPU and GPU-health readers.

/// CSV fields with their header name (units in brackets stripped).
pub(crate) fn csv(t: &str) -> (Vec<String>, Vec<Vec<String>>) {
    // The header is the first line naming `index`, `uuid` or `pid` (an error from a first
    // attempt may precede it).
    let mut lines = t
        .lines()
        .filter(|l| !l.trim().is_empty())
        .skip_while(|l| !is_header(l));
    let header: Vec<String> = lines
        .next()
        .unwrap_or("")
        .split(',')
        .map(|h| {
            h.split(" [")
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .collect();
    let rows = lines
        .take(1024)
        .map(|l| l.split(',').map(|v| v.trim().to_string()).collect())
        .collect();
    (header, rows)
}

pub(crate) fn val<'a>(header: &[String], row: &'a [String], names: &[&str]) -> Option<&'a str> {
    let i = header.iter().position(|h| names.contains(&h.as_str()))?;
    let v = row.get(i)?.as_str();
    let bad = v.is_empty() || v.starts_with('[') || v.eq_ignore_ascii_case("n/a");
    (!bad).then_some(v)
}

pub(crate) fn num<T: std::str::FromStr>(v: Option<&str>) -> Option<T> {
    v.and_then(|x| x.split_whitespace().next())
        .and_then(|x| x.parse().ok())
}

/// Whether the text looks like nvidia-smi CSV (a header naming `index` or `uuid`).
pub(crate) fn is_csv(t: &str) -> bool {
    t.lines().any(is_header)
}

fn is_header(h: &str) -> bool {
    h.split(',')
        .map(|f| f.split(" [").next().unwrap_or("").trim())
        .any(|f| matches!(f, "index" | "uuid" | "gpu_uuid" | "pid"))
}
