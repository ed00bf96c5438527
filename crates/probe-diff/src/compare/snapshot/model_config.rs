//! The models' `config.json` fields, model by model.

use std::collections::BTreeSet;

use probe_model::ModelConfig;

use super::collector::{Collector, kind_of};
use crate::impact::{Area, Subject};
use probe_launch::catalog::values_equal;

pub(super) fn compare_model_configs(
    before: &[ModelConfig],
    after: &[ModelConfig],
    collector: &mut Collector,
) {
    let normalize = |model: &str| model.trim().trim_end_matches('/').to_string();
    let mut pairs: Vec<(&ModelConfig, &ModelConfig)> = before
        .iter()
        .filter_map(|left| {
            after
                .iter()
                .find(|right| normalize(&right.model) == normalize(&left.model))
                .map(|right| (left, right))
        })
        .collect();
    if pairs.is_empty()
        && let ([only_before], [only_after]) = (before, after)
    {
        pairs.push((only_before, only_after));
    }
    let several = pairs.len() > 1;
    for (left, right) in pairs {
        let names: BTreeSet<&String> = left.fields.keys().chain(right.fields.keys()).collect();
        for name in names {
            let before_value = left.fields.get(name);
            let after_value = right.fields.get(name);
            let equal = match (before_value, after_value) {
                (Some(a), Some(b)) => values_equal(a, b, None),
                (None, None) => true,
                _ => false,
            };
            if equal {
                continue;
            }
            let kind = kind_of(&before_value, &after_value);
            let subject =
                Subject::new(Area::ModelConfig, name, kind).values(before_value, after_value);
            let key = if several {
                format!("model_config[{}]:{name}", right.model)
            } else {
                format!("model_config:{name}")
            };
            collector.push(&subject, key, None);
        }
    }
}
