// Prints where a V8 CPU profile's time goes (bench/http/cpuprofile.ts's summary):
//   node bench/profile-summary.ts <file.cpuprofile> [rows]
import { readFileSync } from 'node:fs';
import { summariseProfile, type Profile } from './http/cpuprofile.ts';

const [file, rows] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node bench/profile-summary.ts <file.cpuprofile> [rows]\n');
  process.exit(2);
}
console.log(summariseProfile(JSON.parse(readFileSync(file, 'utf8')) as Profile, Number(rows ?? 30)).join('\n'));
