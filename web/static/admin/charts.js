// charts.js: the six live charts of the selected screening (waiting, admitted per second, active, seats
// sold, admissions skipped, sockets per instance): what each shows, its current value and legend in text
// beside it, and a text alternative for screen readers. draw.js paints them.

import { t } from '../i18n.js';
import { setText } from './dom.js';
import { draw } from './draw.js';
import { count, fmtCount, fmtRate } from './format.js';
import { gapMs, samples, windowMs } from './history.js';
import { selectedScreening, st } from './state.js';

// Line dashes, one per series, so no series is told apart by colour alone.
const dashes = [[], [7, 4], [2, 3], [10, 3, 2, 3], [4, 2, 4, 6], [1, 5]];

// charts holds each figure.chart of the page by its data-chart name, with its parts.
const charts = {};
document.querySelectorAll('figure.chart').forEach((fig) => {
  charts[fig.dataset.chart] = {
    fig,
    canvas: fig.querySelector('canvas'),
    value: fig.querySelector('.chart-value'),
    legend: fig.querySelector('.chart-legend'),
    title: fig.querySelector('.chart-title'),
  };
});

// palette reads the charts' colours from the style sheet, so they follow the light or dark scheme.
function palette() {
  const css = getComputedStyle(document.documentElement);
  const v = (name, fallback) => css.getPropertyValue(name).trim() || fallback;
  return {
    series: [1, 2, 3, 4, 5, 6].map((i) => v('--chart-' + i, '#0a58a8')),
    fill: v('--chart-fill', 'rgba(10,88,168,.12)'),
    limit: v('--chart-limit', '#a61b1b'),
    grid: v('--line', '#d5d9df'),
    muted: v('--muted', '#4f5863'),
    font: getComputedStyle(document.body).fontFamily || 'system-ui, sans-serif',
  };
}

// rate turns a counter into a per-second series: the difference between samples over the time between
// them. A counter that went down (a restarted line) counts from zero.
function rate(past, read) {
  const out = [];
  for (let i = 1; i < past.length; i++) {
    const dtMs = past[i].atMs - past[i - 1].atMs;
    if (dtMs <= 0 || dtMs > gapMs) continue;
    const d = read(past[i]) - read(past[i - 1]);
    out.push([past[i].atMs, Math.max(0, d) / (dtMs / 1000)]);
  }
  return out;
}

function lastOf(points) {
  return points.length ? points[points.length - 1][1] : 0;
}

// specs describes the six charts of screening s from its samples.
function specs(s, past, pal) {
  const last = past.length ? past[past.length - 1] : null;
  const col = (i) => pal.series[i % pal.series.length];
  const dash = (i) => dashes[i % dashes.length];
  const pts = (read) => past.map((p) => [p.atMs, read(p)]);
  const out = {};

  const waiting = pts((p) => p.waiting);
  const pre = pts((p) => p.pre);
  out.waiting = {
    series: [
      { name: t('admin.s.waiting'), color: col(0), dash: dash(0), points: waiting, fill: true },
      { name: t('admin.s.pre'), color: col(1), dash: dash(1), points: pre },
    ],
    value: last ? last.waiting : null,
    valueText: last ? fmtCount(last.waiting) : '–',
    fmt: fmtCount,
  };

  const admitted = rate(past, (p) => p.admittedTotal);
  out.admitted = {
    series: [{ name: t('admin.s.admitted'), color: col(0), dash: dash(0), points: admitted, fill: true }],
    value: admitted.length ? lastOf(admitted) : null,
    valueText: admitted.length ? t('admin.perSecond', { n: fmtRate(lastOf(admitted)) }) : '–',
    extra: last ? [t('admin.inAll', { n: fmtCount(last.admittedTotal) })] : [],
    fmt: fmtRate,
    rate: true,
  };

  out.active = {
    series: [{ name: t('admin.s.active'), color: col(0), dash: dash(0), points: pts((p) => p.active), fill: true }],
    limits: last && last.maxActive ? [{ name: t('admin.s.maxActive'), value: last.maxActive }] : [],
    value: last ? last.active : null,
    valueText: last ? t('admin.ofMax', { n: fmtCount(last.active), max: fmtCount(last.maxActive) }) : '–',
    fmt: fmtCount,
  };

  out.sold = {
    series: [{ name: t('admin.s.sold'), color: col(0), dash: dash(0), points: pts((p) => p.sold), fill: true }],
    limits: last && last.seatsTotal ? [{ name: t('admin.s.seats'), value: last.seatsTotal }] : [],
    value: last ? last.sold : null,
    valueText: last ? t('admin.ofMax', { n: fmtCount(last.sold), max: fmtCount(last.seatsTotal) }) : '–',
    fmt: fmtCount,
  };

  const reasons = [...new Set(past.flatMap((p) => Object.keys(p.skips)))].sort();
  const skipSeries = reasons.map((r, i) => ({
    name: r,
    color: col(i),
    dash: dash(i),
    points: rate(past, (p) => count(p.skips[r])),
    total: last ? count(last.skips[r]) : 0,
  }));
  const skipNow = skipSeries.reduce((sum, x) => sum + lastOf(x.points), 0);
  out.skips = {
    series: skipSeries,
    value: past.length > 1 ? skipNow : null,
    valueText: past.length > 1 ? t('admin.perSecond', { n: fmtRate(skipNow) }) : '–',
    empty: t('admin.noSkips'),
    fmt: fmtRate,
    rate: true,
    legendText: (x) => `${t('admin.perSecond', { n: fmtRate(lastOf(x.points)) })} · ${t('admin.inAll', { n: fmtCount(x.total) })}`,
  };

  const instances = [...new Set(past.flatMap((p) => Object.keys(p.sockets)))].sort();
  const socketSeries = [{
    name: t('admin.s.allInstances'),
    color: col(0),
    dash: dash(0),
    points: pts((p) => Object.values(p.sockets).reduce((a, b) => a + b, 0)),
    fill: true,
    wide: true,
  }];
  instances.forEach((id, i) => {
    socketSeries.push({
      name: id,
      color: col(i + 1),
      dash: dash(i + 1),
      points: past.filter((p) => id in p.sockets).map((p) => [p.atMs, p.sockets[id]]),
    });
  });
  const socketsNow = last ? Object.values(last.sockets).reduce((a, b) => a + b, 0) : null;
  out.sockets = {
    series: instances.length ? socketSeries : [],
    value: socketsNow,
    valueText: socketsNow === null ? '–' : fmtCount(socketsNow),
    empty: t('admin.noInstances'),
    fmt: fmtCount,
  };
  return out;
}

// drawCharts draws the selected screening's six charts, with their values, legends and text alternatives.
export function drawCharts() {
  if (st.view !== 'console') return;
  const s = selectedScreening();
  const past = (s && samples(s.id)) || [];
  const pal = palette();
  const t1 = past.length ? past[past.length - 1].atMs : st.lastAtMs || Date.now();
  const all = specs(s, past, pal);
  for (const [name, c] of Object.entries(charts)) {
    const spec = all[name];
    c.fig.dataset.points = String(past.length);
    c.fig.dataset.at = past.length ? String(t1) : '';
    c.fig.dataset.screening = s ? s.id : '';
    setText(c.value, spec.valueText);
    c.value.dataset.value = spec.value === null ? '' : String(spec.value);
    draw(c.canvas, spec, t1, pal);
    c.canvas.setAttribute('aria-label', altText(c.title.textContent, spec));
    legend(c.legend, spec);
  }
}

// altText says what a chart shows in words: each series now, at least and at most, and the limits.
function altText(title, spec) {
  if (!spec.series.length || spec.series.every((x) => !x.points.length)) {
    return `${title}. ${spec.empty && spec.series.length === 0 && spec.value !== null ? spec.empty : t('admin.noData')}`;
  }
  const parts = spec.series.map((x) => {
    const vs = x.points.map((p) => p[1]);
    const f = spec.fmt;
    return t('admin.seriesAlt', {
      name: x.name,
      now: vs.length ? f(vs[vs.length - 1]) : '–',
      min: vs.length ? f(Math.min(...vs)) : '–',
      max: vs.length ? f(Math.max(...vs)) : '–',
    });
  });
  for (const l of spec.limits || []) parts.push(`${l.name}: ${spec.fmt(l.value)}`);
  return t('admin.chartAlt', { title, secs: windowMs / 1000, series: parts.join('; ') });
}

// legend lists the series and limits of a chart with a swatch of their line and their current value.
function legend(ul, spec) {
  const items = [];
  if (!spec.series.length && spec.empty && spec.value !== null) {
    const li = document.createElement('li');
    li.textContent = spec.empty;
    items.push(li);
  }
  for (const x of spec.series) {
    const li = document.createElement('li');
    li.append(swatch(x.color, x.dash, x.wide));
    const name = document.createElement('span');
    name.textContent = x.name + ':';
    const b = document.createElement('b');
    b.textContent = spec.legendText ? spec.legendText(x) : x.points.length ? (spec.rate ? t('admin.perSecond', { n: spec.fmt(lastOf(x.points)) }) : spec.fmt(lastOf(x.points))) : '–';
    li.append(name, b);
    items.push(li);
  }
  for (const l of spec.limits || []) {
    const li = document.createElement('li');
    li.append(swatch(palette().limit, [3, 3], false));
    const name = document.createElement('span');
    name.textContent = l.name + ':';
    const b = document.createElement('b');
    b.textContent = spec.fmt(l.value);
    li.append(name, b);
    items.push(li);
  }
  for (const text of spec.extra || []) {
    const li = document.createElement('li');
    li.textContent = text;
    items.push(li);
  }
  ul.replaceChildren(...items);
}

// swatch is a short sample of a series' line, for its legend.
function swatch(color, dash, wide) {
  const c = document.createElement('canvas');
  c.className = 'swatch';
  c.setAttribute('aria-hidden', 'true');
  const dpr = window.devicePixelRatio || 1;
  c.width = Math.round(22 * dpr);
  c.height = Math.round(10 * dpr);
  const g = c.getContext('2d');
  if (g) {
    g.scale(dpr, dpr);
    g.strokeStyle = color;
    g.lineWidth = wide ? 3 : 2;
    g.setLineDash(dash);
    g.beginPath();
    g.moveTo(1, 5);
    g.lineTo(21, 5);
    g.stroke();
  }
  return c;
}
