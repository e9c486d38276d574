/**
 * Cron expressions: 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first).
 * Numbers, `*`, `?` (day fields), ranges `a-b`, steps `*\/n`, `a/n`, `a-b/n`, lists, month names
 * JAN–DEC and weekday names SUN–SAT (any case), weekday 7 = Sunday, and the @-shortcuts.
 * When both day-of-month and day-of-week are restricted (neither starts with `*` or `?`) a day matches
 * if either matches (Vixie cron); otherwise both must match.
 */
import { scheduleError } from './fail.js';
import { ValueSet } from './spec.js';
import type { FieldSpec } from './spec.js';

interface FieldDef {
  name: string;
  min: number;
  max: number;
  names?: readonly string[]; // names[i] ↔ value min + i (months) or i (weekdays)
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'] as const;
const WEEKDAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] as const;

const SECOND: FieldDef = { name: 'second', min: 0, max: 59 };
const MINUTE: FieldDef = { name: 'minute', min: 0, max: 59 };
const HOUR: FieldDef = { name: 'hour', min: 0, max: 23 };
const DOM: FieldDef = { name: 'day-of-month', min: 1, max: 31 };
const MONTH: FieldDef = { name: 'month', min: 1, max: 12, names: MONTHS };
const DOW: FieldDef = { name: 'day-of-week', min: 0, max: 7, names: WEEKDAYS };

export const CRON_SHORTCUTS: Readonly<Record<string, string>> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

function fieldError(def: FieldDef, field: string, part: string, problem: string): never {
  scheduleError(part === field ? `${def.name} field "${field}" ${problem}` : `${def.name} field "${field}": "${part}" ${problem}`);
}

function readValue(def: FieldDef, field: string, text: string): number {
  if (/^\d+$/.test(text)) {
    const v = Number(text);
    if (v < def.min || v > def.max) fieldError(def, field, text, `is out of range ${def.min}-${def.max}`);
    return v;
  }
  if (def.names && /^[a-z]+$/i.test(text)) {
    const i = def.names.indexOf(text.toUpperCase() as never);
    if (i >= 0) return def === MONTH ? i + 1 : i;
    const kind = def === MONTH ? 'month name' : 'weekday name';
    const list = def === MONTH ? 'JAN-DEC' : 'SUN-SAT';
    scheduleError(`${def.name} field "${field}": unknown ${kind} "${text}"; use ${def.min}-${def.max} or ${list}`);
  }
  if (text === 'L' || text.endsWith('W') || text.includes('#') || /^\d*L$/i.test(text)) {
    scheduleError(`${def.name} field "${field}": "${text}" (L, W and # cron extensions) is not supported`);
  }
  fieldError(def, field, text, `is not a number${def.names ? ' or name' : ''}`);
}

/** Parses one field; `star` tells whether it starts with `*` or `?` (unrestricted for Vixie's day rule). */
function parseField(def: FieldDef, field: string): { values: number[]; star: boolean } {
  const values: number[] = [];
  for (const item of field.split(',')) {
    if (item === '') fieldError(def, field, item, 'has an empty list element');
    const slash = item.split('/');
    if (slash.length > 2) fieldError(def, field, item, 'has more than one "/"');
    const [rangeText, stepText] = slash as [string, string | undefined];
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText)) fieldError(def, field, item, `has a step "${stepText}" that is not a number`);
      step = Number(stepText);
      if (step < 1) fieldError(def, field, item, 'has a step of 0; steps must be at least 1');
    }
    let lo: number;
    let hi: number;
    if (rangeText === '*' || rangeText === '?') {
      if (rangeText === '?' && def !== DOM && def !== DOW) {
        fieldError(def, field, item, 'uses "?", which is only allowed in the day-of-month and day-of-week fields');
      }
      lo = def.min;
      hi = def === DOW ? 6 : def.max;
    } else {
      const dash = rangeText.split('-');
      if (dash.length > 2) fieldError(def, field, item, 'is not a valid range; write it like 1-5');
      lo = readValue(def, field, dash[0] as string);
      if (dash.length === 2) {
        hi = readValue(def, field, dash[1] as string);
        // "SAT-SUN" / "5-0": Sunday at the end of a weekday range means 7.
        if (def === DOW && hi === 0 && lo > 0) hi = 7;
        if (hi < lo) fieldError(def, field, item, `is a range that goes backwards (${lo} > ${hi})`);
      } else {
        hi = stepText !== undefined ? (def === DOW ? 6 : def.max) : lo;
      }
    }
    for (let v = lo; v <= hi; v += step) values.push(def === DOW && v === 7 ? 0 : v);
  }
  return { values, star: field.startsWith('*') || field.startsWith('?') };
}

/** Compiles a cron expression (already split on whitespace) into a field spec. */
export function parseCron(tokens: string[]): FieldSpec {
  if (tokens.length === 1 && tokens[0]?.startsWith('@')) {
    const expanded = CRON_SHORTCUTS[tokens[0].toLowerCase()];
    if (expanded === undefined) {
      scheduleError(`unknown word "${tokens[0]}"; cron shortcuts are ${Object.keys(CRON_SHORTCUTS).join(', ')}`);
    }
    return parseCron(expanded.split(' '));
  }
  if (tokens.length !== 5 && tokens.length !== 6) {
    scheduleError(`expected 5 or 6 cron fields, got ${tokens.length}`);
  }
  const f = tokens.length === 6 ? tokens : ['0', ...tokens];
  const [sec, min, hour, dom, month, dow] = f as [string, string, string, string, string, string];
  const seconds = parseField(SECOND, sec);
  const minutes = parseField(MINUTE, min);
  const hours = parseField(HOUR, hour);
  const days = parseField(DOM, dom);
  const months = parseField(MONTH, month);
  const weekdays = parseField(DOW, dow);
  return {
    years: null,
    seconds: new ValueSet(0, 59, seconds.values),
    dayMasks: new Map(),
    minutes: new ValueSet(0, 59, minutes.values),
    hours: new ValueSet(0, 23, hours.values),
    days: new ValueSet(1, 31, days.values),
    lastDays: [],
    months: new ValueSet(1, 12, months.values),
    weekdays: new ValueSet(0, 6, weekdays.values),
    dayMode: days.star || weekdays.star ? 'and' : 'or',
  };
}
