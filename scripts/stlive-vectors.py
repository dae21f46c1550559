#!/usr/bin/env python3
"""Turns a recording of the live SillyTavern app (`RECORD=` of ../shared/tools/stlive) into
the repository's vectors, `tests/stlive/vectors.json` (SPEC §17.4).

    scripts/stlive-vectors.py RECORDING.json [RECORDING.json ...] [--bin target/release/stpreset] [--out FILE]

Each case keeps its inputs inline: the corpus preset by file name and sha256 (never copied),
the card as JSON (cards are the harness's fixtures or this repository's), and the context
stpreset renders with (the chat as ST had it when it built the prompt, every item named by its
speaker, `layout: "sillytavern"`, `random: {"constant": 0.5}`, the chat's pinned
`chat_id_hash`, the chat variables ST held at Send). `expected` is ST's body, normalised and digested (below).

A case our build does not match is kept only when SPEC §17.3 lists why (today: §17.3.1, a preset
whose enabled prompts hold `{{random`): it gets `listed` and `ours_expected`, our own body, which
`cargo test` checks instead. Any other difference is printed and the case is written without a
listing, so that the test fails until the difference is fixed: nothing is skipped silently.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.join(ROOT, '..', 'shared')
CARD_DIRS = [os.path.join(SHARED, 'tools', 'stlive', 'fixtures'), os.path.join(ROOT, 'tests', 'stlive', 'fixtures')]
PRESET_DIRS = {'corpus': os.path.join(SHARED, 'corpus', 'presets'),
               'probe': os.path.join(SHARED, 'tools', 'stlive', 'fixtures', 'presets')}
CHAT_ID_HASH = 20250615


def find(dirs, name):
    for d in dirs:
        p = os.path.join(d, name)
        if os.path.exists(p):
            return p
    sys.exit(f'stlive-vectors: {name} not found in {dirs}')


def messages(inputs):
    """The chat stpreset gets: as ST built the prompt from it, except that a swipe gives the
    whole chat (the library leaves the swiped message out, SPEC §18.1)."""
    msgs = list(inputs['messages'])
    left = (inputs.get('chat_in_st') or {}).get('last_left_out')
    if inputs.get('generation_type') == 'swipe' and left:
        msgs.append(left)
    return msgs


def context(inputs):
    user = inputs['persona']['name']
    ctx = {
        'layout': 'sillytavern',
        'random': {'constant': 0.5},
        'chat_id_hash': CHAT_ID_HASH,
        'user': user,
        'now': inputs['now'],
        'model': inputs['model'],
        'items': [{
            'tag': 'DIALOGUE_HISTORY',
            'role': 'user' if m['from'] == 'user' else 'model',
            'text': m['text'],
            'time': m['time'],
            'name': m.get('name') or (user if m['from'] == 'user' else inputs['char']),
        } for m in messages(inputs)],
    }
    text = lambda v: v if isinstance(v, str) else json.dumps(v, separators=(',', ':'))
    if inputs.get('variables'):
        ctx['variables'] = {k: text(v) for k, v in inputs['variables'].items()}
    if inputs.get('globals'):
        ctx['globals'] = {k: text(v) for k, v in inputs['globals'].items()}
    if inputs['persona'].get('description'):
        ctx['persona'] = inputs['persona']['description']
    if inputs.get('generation_type', 'normal') != 'normal':
        ctx['generation_type'] = inputs['generation_type']
    if 'quiet_prompt' in inputs:
        ctx['quiet_prompt'] = inputs['quiet_prompt']
    if inputs.get('group'):
        ctx['group'] = inputs['group']
        ctx['char'] = inputs['char']
    gs = inputs.get('group_settings')
    if gs:
        # A group variant (tools/stlive/20-group.patch): its settings, the other members' cards inline.
        for k in ('group_generation_mode', 'group_muted', 'group_join_prefix', 'group_join_suffix'):
            ctx[k] = gs[k]
        cards = {}
        for name, ref in gs['group_cards'].items():
            data = open(find(CARD_DIRS, ref['file']), 'rb').read()
            assert hashlib.sha256(data).hexdigest() == ref['sha256'], f"{ref['file']} changed since the recording"
            cards[name] = json.loads(data)
        ctx['group_cards'] = cards
    return ctx


def normalise(body):
    """The field omissions SPEC §14.7.9 and §12.8.7 give the same meaning (stlive's
    EQUIVALENT_FIELDS) and the deliberate ones (DELIBERATE_FIELDS), as the test applies them."""
    b = json.loads(json.dumps(body))
    if b.get('stream') is False:
        b.pop('stream')
    if b.get('stop_sequences') == []:
        b.pop('stop_sequences')
    if b.get('system') == []:
        b.pop('system')
    b.pop('safetySettings', None)
    b.pop('stop', None)
    gc = b.get('generationConfig')
    if isinstance(gc, dict):
        if gc.get('candidateCount') == 1:
            gc.pop('candidateCount')
        if isinstance(gc.get('thinkingConfig'), dict):
            gc['thinkingConfig'].pop('includeThoughts', None)
    if isinstance(b.get('thinking'), dict):
        b['thinking'].pop('display', None)

    def ints(x):
        if isinstance(x, float) and x.is_integer():
            return int(x)
        if isinstance(x, dict):
            return {k: ints(v) for k, v in x.items()}
        if isinstance(x, list):
            return [ints(v) for v in x]
        return x
    return ints(b)


SHORT = 32


def digest(x):
    """The body with every string over 32 bytes replaced by `sha256:HEX` of its UTF-8: the
    bodies hold the corpus presets' text, which the repository never copies (SPEC §17.4). The
    test digests its own body the same way; structure, keys, numbers and short strings stay."""
    if isinstance(x, str):
        b = x.encode('utf-8')
        return x if len(b) <= SHORT else 'sha256:' + hashlib.sha256(b).hexdigest()
    if isinstance(x, dict):
        return {k: digest(v) for k, v in x.items()}
    if isinstance(x, list):
        return [digest(v) for v in x]
    return x


def enabled_text(preset):
    order = next((l.get('order') or [] for l in preset.get('prompt_order', []) if str(l.get('character_id')) == '100001'), None)
    prompts = {p.get('identifier'): p for p in preset.get('prompts', []) if isinstance(p, dict)}
    ids = [e['identifier'] for e in order if e.get('enabled')] if order is not None else list(prompts)
    return '\n'.join(str(prompts.get(i, {}).get('content') or '') for i in ids)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('recording', nargs='+')
    ap.add_argument('--bin', default=os.path.join(ROOT, 'target', 'release', 'stpreset'))
    ap.add_argument('--out', default=os.path.join(ROOT, 'tests', 'stlive', 'vectors.json'))
    args = ap.parse_args()
    recorded = [v for r in args.recording for v in json.load(open(r))]
    ids = [v['id'] for v in recorded]
    assert len(ids) == len(set(ids)), 'a case id is in two recordings'
    cards, cases, unlisted = {}, [], []
    for v in recorded:
        i = v['inputs']
        group = i['preset']['group']
        preset_path = find([PRESET_DIRS.get(group, PRESET_DIRS['corpus'])], i['preset']['file'])
        card_path = find(CARD_DIRS, i['card']['file'])
        card_bytes = open(card_path, 'rb').read()
        card_sha = hashlib.sha256(card_bytes).hexdigest()
        assert card_sha == i['card']['sha256'], f"{v['id']}: the card changed since the recording"
        cards[card_sha] = json.loads(card_bytes)
        ctx = context(i)
        case = {
            'id': v['id'],
            'inputs': {
                'preset': {'file': i['preset']['file'], 'sha256': i['preset']['sha256'], 'group': group},
                'card': card_sha,
                'shape': i['shape'],
                'st_source': i['st_source'],
                'context': ctx,
            },
            'expected': digest(normalise(v['expected'])),
        }
        with tempfile.NamedTemporaryFile('w', suffix='.json', delete=False) as f:
            json.dump(ctx, f)
        r = subprocess.run([args.bin, 'render', preset_path, '--context', f.name, '--card', card_path,
                            '--shape', i['shape'], '--format', 'json'], capture_output=True, text=True)
        os.unlink(f.name)
        if r.returncode != 0:
            sys.exit(f"stlive-vectors: {v['id']}: {r.stderr}")
        ours = json.loads(r.stdout)['request']
        if normalise(ours) != normalise(v['expected']):
            if '{{random' in enabled_text(json.load(open(preset_path))):
                case['listed'] = ['17.3.1']
                case['ours_expected'] = digest(normalise(ours))
            else:
                unlisted.append(v['id'])
        cases.append(case)
    doc = {
        'format': 'stpreset-stlive-vectors/1',
        'comment': 'Recorded from the live SillyTavern 1.18 app (e1d95b16) by ../shared/tools/stlive; regenerate with scripts/stlive-record. Inputs inline; corpus presets by name and sha256 only; bodies normalised (SPEC 14.7.9 omissions) and with every string over 32 bytes as sha256:HEX, so that no preset text is copied.',
        'digest_over_bytes': SHORT,
        'cards': cards,
        'cases': cases,
    }
    with open(args.out, 'w') as f:
        json.dump(doc, f, ensure_ascii=False, indent=None, separators=(',', ':'))
        f.write('\n')
    listed = sum(1 for c in cases if 'listed' in c)
    print(f'{len(cases)} cases: {len(cases) - listed - len(unlisted)} identical, {listed} listed, {len(unlisted)} neither')
    for u in unlisted:
        print('  neither identical nor listed:', u)


if __name__ == '__main__':
    main()
