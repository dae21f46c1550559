//! Inclusion groups (SPEC §15.5.8): among a pass's candidates, one entry per group, by
//! override, group scoring and weight.

use std::collections::HashMap;

use super::call::{Call, PassKind};

impl<'b> Call<'_, 'b> {
    /// SPEC §15.5.8: inclusion groups over the pass's candidates.
    pub(super) fn groups(&mut self, mut candidates: Vec<usize>, kind: PassKind) -> Vec<usize> {
        // Group name → members, names in JS object key order.
        let mut names: Vec<&'b str> = Vec::new();
        let mut members: HashMap<&'b str, Vec<usize>> = HashMap::new();
        for &i in &candidates {
            for &g in &self.ents[i].groups {
                members
                    .entry(g)
                    .or_insert_with(|| {
                        names.push(g);
                        Vec::new()
                    })
                    .push(i);
            }
        }
        if names.is_empty() {
            return candidates;
        }
        let order = crate::lore::json::js_key_order(names.iter().copied());
        let names: Vec<&str> = order.into_iter().map(|k| names[k]).collect();
        let mut dropped = vec![false; self.ents.len()];
        let mut groups: Vec<(&str, Vec<usize>, bool)> = Vec::new();
        for name in names {
            let group = members.remove(name).unwrap_or_default();
            let stuck: Vec<usize> = group.iter().copied().filter(|&i| self.sticky[i]).collect();
            if stuck.is_empty() {
                groups.push((name, group, false));
            } else {
                for &i in &group {
                    if !self.sticky[i] {
                        dropped[i] = true;
                    }
                }
                groups.push((name, stuck, true));
            }
        }
        // Scoring.
        let global = self.settings.group_scoring;
        for (_, group, stuck) in &mut groups {
            if *stuck {
                continue;
            }
            let scored = global
                || group
                    .iter()
                    .any(|&i| self.ents[i].entry.use_group_scoring == Some(true));
            if !scored {
                continue;
            }
            let scores: Vec<u64> = group.iter().map(|&i| self.score(i, kind)).collect();
            let max = scores.iter().copied().max().unwrap_or(0);
            let mut keep = Vec::new();
            for (&i, &s) in group.iter().zip(&scores) {
                let on = self.ents[i].entry.use_group_scoring.unwrap_or(global);
                if on && s < max {
                    dropped[i] = true;
                } else {
                    keep.push(i);
                }
            }
            *group = keep;
        }
        for (name, group, stuck) in &groups {
            if *stuck {
                continue;
            }
            let blocked = self.activated_groups.contains(name);
            if blocked {
                for &i in group {
                    dropped[i] = true;
                }
                continue;
            }
            if group.len() <= 1 {
                continue;
            }
            let mut winner = None;
            for &i in group {
                if self.ents[i].entry.group_override
                    && winner
                        .is_none_or(|w: usize| self.ents[i].entry.order > self.ents[w].entry.order)
                {
                    winner = Some(i);
                }
            }
            if winner.is_none() {
                // Doubles, as ST sums them: weights up to i64::MAX cannot overflow.
                let weight = |i: usize| self.ents[i].entry.group_weight as f64;
                let total: f64 = group.iter().map(|&i| weight(i)).sum();
                let roll = self.random.draw() * total;
                let mut sum = 0.0;
                for &i in group {
                    sum += weight(i);
                    if sum >= roll {
                        winner = Some(i);
                        break;
                    }
                }
            }
            if let Some(w) = winner {
                for &i in group {
                    if i != w {
                        dropped[i] = true;
                    }
                }
            }
        }
        candidates.retain(|&i| !dropped[i]);
        candidates
    }

    /// Group score: primary keys matched, plus secondary ones for AND_ANY, or all of them for
    /// AND_ALL when all match.
    fn score(&mut self, i: usize, kind: PassKind) -> u64 {
        self.expand_keys(i);
        let e = self.ents[i].entry;
        let (np, ns) = (e.key.len(), e.keysecondary.len());
        if np == 0 {
            return 0;
        }
        let primary = (0..np).filter(|&k| self.key_hit(i, k, kind)).count() as u64;
        if ns == 0 {
            return primary;
        }
        let secondary = (0..ns).filter(|&k| self.key_hit(i, np + k, kind)).count() as u64;
        match e.selective_logic {
            0 => primary + secondary,
            3 if secondary == ns as u64 => primary + secondary,
            _ => primary,
        }
    }
}
