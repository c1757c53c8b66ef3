// draw.js: paints one chart on its canvas: the last two minutes along x, from 0 to a round maximum up y, a
// line per series (broken where the stream was down, the first one filled), and the limits as dashed lines.

import { t } from '../i18n.js';
import { fmtCount, fmtNum } from './format.js';
import { gapMs, windowMs } from './history.js';

// axisTop is the top of a y axis that shows v: a round number whose half, the middle grid line, is a whole
// number too when the chart counts things.
function axisTop(v, whole) {
  if (whole && v <= 10) return Math.max(2, Math.ceil(v / 2) * 2);
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of whole ? [1, 2, 4, 5, 6, 8, 10] : [1, 2, 2.5, 4, 5, 6, 8, 10]) {
    if (m * p >= v - 1e-9) return m * p;
  }
  return 10 * p;
}

// draw paints one chart: the last windowMs up to t1 along x, from 0 to a round maximum up y, a line per
// series (broken where the stream was down), and the limits as dashed lines.
export function draw(canvas, spec, t1, pal) {
  const rect = canvas.getBoundingClientRect();
  const w = Math.round(rect.width);
  const h = Math.round(rect.height);
  if (w < 10 || h < 10) return; // not laid out (hidden)
  const dpr = window.devicePixelRatio || 1;
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
  }
  const g = canvas.getContext('2d');
  if (!g) return;
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  g.font = `11px ${pal.font}`;

  let max = 0;
  for (const x of spec.series) for (const p of x.points) max = Math.max(max, p[1]);
  for (const l of spec.limits || []) max = Math.max(max, l.value);
  const top = axisTop(max, !spec.rate);
  const labelFmt = (v) => (spec.rate ? fmtNum(v, top < 5 ? 1 : 0) : fmtCount(v));
  const yLabels = [top, top / 2, 0].map(labelFmt);
  const padL = Math.ceil(Math.max(...yLabels.map((s) => g.measureText(s).width))) + 8;
  const padR = 6;
  const padT = 8;
  const padB = 18;
  const pw = Math.max(1, w - padL - padR);
  const ph = Math.max(1, h - padT - padB);
  const t0 = t1 - windowMs;
  const X = (tMs) => padL + ((tMs - t0) / windowMs) * pw;
  const Y = (v) => padT + ph - (v / top) * ph;

  // Grid and labels.
  g.lineWidth = 1;
  g.setLineDash([]);
  g.strokeStyle = pal.grid;
  g.fillStyle = pal.muted;
  g.textBaseline = 'middle';
  g.textAlign = 'right';
  [top, top / 2, 0].forEach((v, i) => {
    const y = Math.round(Y(v)) + 0.5;
    g.beginPath();
    g.moveTo(padL, y);
    g.lineTo(padL + pw, y);
    g.stroke();
    g.fillText(yLabels[i], padL - 4, y);
  });
  g.textBaseline = 'alphabetic';
  const xTicks = [[t0, t('admin.ago', { n: windowMs / 1000 }), 'left'], [t1 - windowMs / 2, t('admin.ago', { n: windowMs / 2000 }), 'center'], [t1, t('admin.now'), 'right']];
  for (const [tMs, label, align] of xTicks) {
    g.textAlign = align;
    g.fillText(label, align === 'left' ? padL : align === 'right' ? padL + pw : X(tMs), h - 4);
  }

  g.save();
  g.beginPath();
  g.rect(padL, padT - 2, pw, ph + 4);
  g.clip();

  // Limits.
  for (const l of spec.limits || []) {
    g.strokeStyle = pal.limit;
    g.lineWidth = 1.5;
    g.setLineDash([3, 3]);
    const y = Y(l.value);
    g.beginPath();
    g.moveTo(padL, y);
    g.lineTo(padL + pw, y);
    g.stroke();
  }

  // Series, in runs without gaps; the first may be filled.
  for (const x of spec.series) {
    const runs = [];
    let run = [];
    for (const p of x.points) {
      if (run.length && p[0] - run[run.length - 1][0] > gapMs) {
        runs.push(run);
        run = [];
      }
      run.push(p);
    }
    if (run.length) runs.push(run);
    for (const r of runs) {
      if (x.fill && r.length > 1) {
        g.fillStyle = pal.fill;
        g.beginPath();
        g.moveTo(X(r[0][0]), Y(0));
        for (const p of r) g.lineTo(X(p[0]), Y(p[1]));
        g.lineTo(X(r[r.length - 1][0]), Y(0));
        g.closePath();
        g.fill();
      }
      g.strokeStyle = x.color;
      g.lineWidth = x.wide ? 2.5 : 2;
      g.lineJoin = 'round';
      g.setLineDash(x.dash);
      g.beginPath();
      r.forEach((p, i) => (i ? g.lineTo(X(p[0]), Y(p[1])) : g.moveTo(X(p[0]), Y(p[1]))));
      if (r.length === 1) {
        // A lone sample: a dot, so it shows.
        g.arc(X(r[0][0]), Y(r[0][1]), 2, 0, 2 * Math.PI);
      }
      g.stroke();
    }
  }
  g.restore();
}
