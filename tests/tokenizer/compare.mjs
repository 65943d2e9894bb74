// braked's tokenizer (bench/brake-tokens, front/tokenizer.h) against
// js-tiktoken, the reference: the same count for every text of a varied
// corpus (English, code, numbers, whitespace runs, contractions in every
// case, accents, CJK, emoji, a long prompt), under o200k_base and
// cl100k_base.
//
//   node tests/tokenizer/compare.mjs build/bench/brake-tokens
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dist = join(root, 'tokenizers', 'node_modules', 'js-tiktoken', 'dist');
if (!existsSync(dist)) {
  console.log('tests/tokenizer: js-tiktoken is not installed (scripts/setup-debian runs npm ci in tokenizers/)');
  process.exit(77);
}
const tool = process.argv[2];
const { Tiktoken } = await import(pathToFileURL(join(dist, 'lite.js')));

let seed = 7;
const random = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
const pick = (list) => list[random(list.length)];
const words = ['the', 'agent', "it's", "WE'LL", "They'Re", 'naïve', 'café', 'Übergröße',
  '東京', 'データ', '🙂', '👩‍💻', '12345678', '3.14159', '  ', '\n\n', '\t', 'foo_bar()',
  '{"key": [1, 2]}', 'https://example.com/a?b=c', '    indented', '!!!', '...', '—', 'x'];
const corpus = [
  '', 'a', ' ', 'Hello, world!', "I'm here; you're there; it'll work.",
  'def f(x):\n    return x ** 2  # square\n', '1234567890 0.5 1e10 -42',
  '   leading and trailing   ', 'line\r\nbreaks\r\n\r\n', 'émigré façade coöperate',
  '日本語のテキストと English mixed', 'emoji 🎉🎉🎉 and 👨‍👩‍👧', 'ALL CAPS SENTENCE HERE',
  'tabs\tand\tspaces  \t mixed', '<|endoftext|> is text here',
];
for (let i = 0; i < 200; i += 1) {
  corpus.push(Array.from({ length: 1 + random(40) }, () => pick(words)).join(random(3) ? ' ' : ''));
}
corpus.push(Array.from({ length: 20000 }, () => pick(words)).join(' '));  // a long prompt

let failures = 0;
for (const name of ['o200k_base', 'cl100k_base']) {
  const ranks = (await import(pathToFileURL(join(dist, 'ranks', `${name}.js`)))).default;
  const reference = new Tiktoken(ranks);
  const run = spawnSync(tool, [join(dist, 'ranks', `${name}.js`)], {
    input: corpus.map((t) => JSON.stringify(t)).join('\n') + '\n', maxBuffer: 1 << 26 });
  if (run.status !== 0) {
    console.log(`${name}: brake-tokens failed: ${run.stderr}`);
    process.exit(1);
  }
  const counts = run.stdout.toString().trim().split('\n').map(Number);
  corpus.forEach((text, i) => {
    const want = reference.encode(text, [], []).length;  // specials as text
    if (counts[i] !== want) {
      failures += 1;
      if (failures <= 10) console.log(`${name}: ${JSON.stringify(text.slice(0, 80))}: brake ${counts[i]}, js-tiktoken ${want}`);
    }
  });
  console.log(`${name}: ${corpus.length} texts compared`);
}
console.log(failures === 0 ? 'all counts equal' : `${failures} counts differ`);
process.exit(failures === 0 ? 0 : 1);
