// dom.js: the control room's elements, looked up once (the other modules reach the page through el), and
// setText.

const $ = (sel) => document.querySelector(sel);

export const el = {
  main: $('#main'),
  checking: $('#checking'),
  signOut: $('#sign-out'),
  problem: $('#view-problem'),
  problemText: $('#problem-text'),
  problemRetry: $('#problem-retry'),
  login: $('#view-login'),
  loginForm: $('#login-form'),
  key: $('#admin-key'),
  loginError: $('#login-error'),
  loginSubmit: $('#login-submit'),
  console: $('#view-console'),
  stream: $('[data-testid="stream"]'),
  streamText: $('#stream-text'),
  streamError: $('#stream-error'),
  noScreenings: $('#no-screenings'),
  overviewRows: $('#overview-rows'),
  select: $('#screening-select'),
  selectedHeading: $('#selected-heading'),
  state: $('[data-testid="state"]'),
  seats: $('#sel-seats'),
  times: $('#sel-times'),
  current: {
    interval: $('[data-testid="current-interval"]'),
    batch_size: $('[data-testid="current-batch_size"]'),
    max_active: $('[data-testid="current-max_active"]'),
    active_ttl: $('[data-testid="current-active_ttl"]'),
  },
  pause: $('#pause'),
  resume: $('#resume'),
  close: $('#close'),
  actionMessage: $('#action-message'),
  admissionForm: $('#admission-form'),
  adm: {
    interval: $('#adm-interval'),
    batch_size: $('#adm-batch'),
    max_active: $('#adm-max'),
    active_ttl: $('#adm-ttl'),
  },
  admissionMessage: $('#admission-message'),
  admissionSubmit: $('#admission-submit'),
  createForm: $('#create-form'),
  newID: $('#new-id'),
  newName: $('#new-name'),
  newOpens: $('#new-opens'),
  newStarts: $('#new-starts'),
  layoutGrid: $('#layout-grid'),
  layoutList: $('#layout-list'),
  gridFields: $('#layout-grid-fields'),
  listFields: $('#layout-list-fields'),
  newRows: $('#new-rows'),
  newPerRow: $('#new-per-row'),
  newSeats: $('#new-seats'),
  newAdm: {
    interval: $('#new-interval'),
    batch_size: $('#new-batch'),
    max_active: $('#new-max'),
    active_ttl: $('#new-ttl'),
  },
  createMessage: $('#create-message'),
  createSubmit: $('#create-submit'),
  dialog: $('#close-dialog'),
  dialogText: $('#close-text'),
  dialogCancel: $('#close-cancel'),
  dialogConfirm: $('#close-confirm'),
  charts: $('.charts'),
};

// setText writes text into node only when it differs, so a redraw every second leaves unchanged text
// (and a screen reader's place in it) alone.
export function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}
