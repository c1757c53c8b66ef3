// i18n.js: Korean and English strings, number, ordinal and date formatting, and the language switch.
// The language comes from a choice the user made before (localStorage), else from the browser's languages.
'use strict';

(function () {
  const STORE_KEY = 'waitroom:lang';

  // Strings take {name} placeholders; a function gets the placeholder values as an object.
  const dict = {
    en: {
      skip: 'Skip to content',
      langName: 'English',
      langSwitch: 'Change language',
      noscript: 'This page needs JavaScript.',
      // The list.
      listTitle: 'Screenings',
      listLead: 'Choose a screening to join its waiting line. Seats go to people in the order they arrive.',
      loading: 'Loading…',
      loadFailed: 'Could not load the screenings.',
      retry: 'Try again',
      empty: 'There are no screenings yet.',
      'state.on_sale': 'On sale',
      'state.upcoming': 'Opens soon',
      'state.sold_out': 'Sold out',
      startsAt: 'Starts {time}',
      opensAt: 'Sale opens {time}',
      seatsLeft: (v) => `${v.n} of ${v.total} seats left`,
      join: 'Join the line',
      joinUpcoming: 'Wait in line',
      // The room.
      roomTitle: 'Waiting room',
      back: '← All screenings',
      'conn.connecting': 'Connecting…',
      'conn.open': 'Connected · live',
      'conn.reconnecting': (v) => v.s > 0 ? `Connection lost · reconnecting in ${v.s} s (your place is kept)` : 'Reconnecting… (your place is kept)',
      'conn.offline': 'Offline · waiting for the network (your place is kept)',
      'conn.closed': 'Disconnected',
      retryNow: 'Reconnect now',
      waitingHeading: 'You are in line',
      placePre: '',
      placeMid: 'in line of',
      placePost: '',
      progress: (v) => `The line has moved ${v.p}% since you arrived.`,
      progressNext: 'You are next. Get ready.',
      keepOpen: 'Keep this page open. A refresh or another tab keeps your place.',
      leave: 'Leave the line',
      backInLine: 'Your turn to book ran out, so you are back in line.',
      admittedHeading: 'It is your turn: choose your seats',
      timeLeft: 'Time left to book',
      timeUp: 'Time is up',
      screen: 'Screen',
      seatMap: 'Seat map',
      rowLabel: (v) => `Row ${v.row}`,
      'seat.available': 'available',
      'seat.selected': 'selected',
      'seat.sold': 'sold',
      seatName: (v) => `${v.id}, ${v.state}`,
      legendAvailable: 'Available',
      legendSelected: 'Selected',
      legendSold: 'Sold',
      selectedNone: (v) => `No seat selected yet (up to ${v.max}).`,
      selectedList: (v) => `Selected: ${v.list} (${v.n} of up to ${v.max})`,
      reserve: (v) => v.n === 0 ? 'Reserve' : v.n === 1 ? 'Reserve 1 seat' : `Reserve ${v.n} seats`,
      reserving: 'Reserving…',
      maxSeats: (v) => `You can choose up to ${v.max} seats.`,
      seatTaken: (v) => `Sorry, ${v.seats} ${v.n === 1 ? 'was' : 'were'} just sold. The map is updated: please choose another seat.`,
      seatLocked: (v) => `${v.seats} ${v.n === 1 ? 'is' : 'are'} being booked by someone else right now. Choose another seat or try again in a moment.`,
      networkError: 'The request did not reach the server. Check your connection and try again.',
      serverError: 'Something went wrong on our side. Please try again.',
      badRequest: (v) => `The request was refused: ${v.msg}`,
      seatsFailed: 'Could not load the seat map.',
      seatsLoading: 'Loading the seat map…',
      confirmedHeading: 'Booked',
      confirmedSeats: 'Your seats',
      bookingNo: (v) => `Booking number ${v.id}`,
      bookedFor: (v) => `${v.name}, ${v.time}`,
      bookAgain: 'Book more seats (join the line again)',
      'final.sold_out.h': 'Sold out',
      'final.sold_out.p': 'Every seat for this screening has been sold. Thank you for waiting.',
      'final.expired.h': 'Your time to book ran out',
      'final.expired.p': 'Your turn passed before a booking was made. Join the line again for a new turn.',
      'final.left.h': 'You left the line',
      'final.left.p': 'You gave up your place. You can join again at the end of the line.',
      'final.spent.h': 'This turn was already used',
      'final.spent.p': 'A booking was already made with this turn, perhaps in another tab.',
      'final.unknown.h': 'No such screening',
      'final.unknown.p': 'This link does not lead to a screening. Choose one from the list.',
      rejoin: 'Join the line again',
      toList: 'See all screenings',
      'announce.rank': (v) => `You are ${v.rank} in line of ${v.total}.`,
      'announce.admitted': (v) => `It is your turn. You have ${v.min} minutes to choose seats.`,
      'announce.oneMinute': 'One minute left to book.',
      'announce.lost': 'Connection lost. Reconnecting; your place is kept.',
      'announce.back': 'Reconnected.',
      'title.waiting': (v) => `${v.rank} in line · ${v.name}`,
      'title.admitted': (v) => `Your turn · ${v.name}`,
    },
    ko: {
      skip: '본문으로 건너뛰기',
      langName: '한국어',
      langSwitch: '언어 변경',
      noscript: '이 페이지는 JavaScript가 필요합니다.',
      listTitle: '상영 목록',
      listLead: '상영을 선택해 대기열에 들어가세요. 좌석은 도착한 순서대로 예매할 수 있습니다.',
      loading: '불러오는 중…',
      loadFailed: '상영 목록을 불러오지 못했습니다.',
      retry: '다시 시도',
      empty: '아직 상영이 없습니다.',
      'state.on_sale': '예매 중',
      'state.upcoming': '오픈 예정',
      'state.sold_out': '매진',
      startsAt: '상영 {time}',
      opensAt: '예매 오픈 {time}',
      seatsLeft: (v) => `잔여 ${v.n}석 / 전체 ${v.total}석`,
      join: '대기열 입장',
      joinUpcoming: '대기열 입장',
      roomTitle: '대기실',
      back: '← 전체 상영 목록',
      'conn.connecting': '연결 중…',
      'conn.open': '연결됨 · 실시간',
      'conn.reconnecting': (v) => v.s > 0 ? `연결 끊김 · ${v.s}초 후 다시 연결 (순번 유지)` : '다시 연결하는 중… (순번 유지)',
      'conn.offline': '오프라인 · 네트워크를 기다리는 중 (순번 유지)',
      'conn.closed': '연결 종료',
      retryNow: '지금 다시 연결',
      waitingHeading: '대기 중입니다',
      placePre: '대기 순번',
      placeMid: '/ 전체',
      placePost: '명',
      progress: (v) => `처음 들어온 뒤로 대기열이 ${v.p}% 줄었습니다.`,
      progressNext: '다음 차례입니다. 준비해 주세요.',
      keepOpen: '이 페이지를 열어 두세요. 새로고침하거나 다른 탭에서 열어도 순번은 유지됩니다.',
      leave: '대기열 나가기',
      backInLine: '예매 시간이 지나 다시 대기열에 들어왔습니다.',
      admittedHeading: '입장 차례입니다. 좌석을 선택하세요',
      timeLeft: '남은 예매 시간',
      timeUp: '시간 종료',
      screen: '스크린',
      seatMap: '좌석 배치도',
      rowLabel: (v) => `${v.row}열`,
      'seat.available': '선택 가능',
      'seat.selected': '선택됨',
      'seat.sold': '판매 완료',
      seatName: (v) => `${v.id}, ${v.state}`,
      legendAvailable: '선택 가능',
      legendSelected: '선택됨',
      legendSold: '판매 완료',
      selectedNone: (v) => `선택한 좌석이 없습니다 (최대 ${v.max}석).`,
      selectedList: (v) => `선택한 좌석: ${v.list} (${v.n}석 / 최대 ${v.max}석)`,
      reserve: (v) => v.n === 0 ? '예매하기' : `${v.n}석 예매하기`,
      reserving: '예매 중…',
      maxSeats: (v) => `최대 ${v.max}석까지 선택할 수 있습니다.`,
      seatTaken: (v) => `죄송합니다. ${v.seats} 좌석이 방금 판매되었습니다. 좌석표를 새로 고쳤으니 다른 좌석을 선택하세요.`,
      seatLocked: (v) => `${v.seats} 좌석은 다른 분이 예매 중입니다. 다른 좌석을 선택하거나 잠시 후 다시 시도하세요.`,
      networkError: '서버에 연결하지 못했습니다. 연결을 확인하고 다시 시도하세요.',
      serverError: '일시적인 오류가 발생했습니다. 다시 시도하세요.',
      badRequest: (v) => `요청이 거절되었습니다: ${v.msg}`,
      seatsFailed: '좌석표를 불러오지 못했습니다.',
      seatsLoading: '좌석표를 불러오는 중…',
      confirmedHeading: '예매 완료',
      confirmedSeats: '예매한 좌석',
      bookingNo: (v) => `예매 번호 ${v.id}`,
      bookedFor: (v) => `${v.name}, ${v.time}`,
      bookAgain: '좌석 더 예매하기 (대기열 다시 들어가기)',
      'final.sold_out.h': '매진되었습니다',
      'final.sold_out.p': '이 상영의 모든 좌석이 판매되었습니다. 기다려 주셔서 감사합니다.',
      'final.expired.h': '예매 시간이 끝났습니다',
      'final.expired.p': '예매하기 전에 입장 시간이 지났습니다. 대기열에 다시 들어가 새 순번을 받으세요.',
      'final.left.h': '대기열에서 나왔습니다',
      'final.left.p': '순번을 포기했습니다. 대기열 맨 뒤로 다시 들어갈 수 있습니다.',
      'final.spent.h': '이미 사용된 입장입니다',
      'final.spent.p': '이 입장으로 이미 예매가 완료되었습니다. 다른 탭에서 예매했을 수 있습니다.',
      'final.unknown.h': '상영을 찾을 수 없습니다',
      'final.unknown.p': '이 주소의 상영이 없습니다. 목록에서 선택하세요.',
      rejoin: '대기열 다시 들어가기',
      toList: '전체 상영 보기',
      'announce.rank': (v) => `현재 대기 순번 ${v.rank}, 전체 ${v.total}명입니다.`,
      'announce.admitted': (v) => `입장 차례입니다. ${v.min}분 안에 좌석을 선택하세요.`,
      'announce.oneMinute': '예매 시간이 1분 남았습니다.',
      'announce.lost': '연결이 끊겼습니다. 다시 연결하는 중이며 순번은 유지됩니다.',
      'announce.back': '다시 연결되었습니다.',
      'title.waiting': (v) => `대기 ${v.rank} · ${v.name}`,
      'title.admitted': (v) => `입장 차례 · ${v.name}`,
    },
  };

  function stored() {
    try {
      const s = localStorage.getItem(STORE_KEY);
      return s && dict[s] ? s : '';
    } catch (_) {
      return '';
    }
  }

  // fromBrowser picks the first of the browser's languages that has strings, else English.
  function fromBrowser() {
    const langs = navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language || 'en'];
    for (const l of langs) {
      const base = String(l).toLowerCase().split('-')[0];
      if (dict[base]) return base;
    }
    return 'en';
  }

  let lang = stored() || fromBrowser();
  const listeners = [];

  function locale() { return lang === 'ko' ? 'ko-KR' : 'en-US'; }

  function t(key, vars) {
    let s = dict[lang][key];
    if (s === undefined) s = dict.en[key];
    if (s === undefined) return key;
    if (typeof s === 'function') return s(vars || {});
    return s.replace(/\{(\w+)\}/g, (m, k) => (vars && k in vars ? String(vars[k]) : m));
  }

  function num(n) { return new Intl.NumberFormat(locale()).format(n); }

  // ordinal is "1st", "2nd", "3rd", "11th", "1,234th" in English and "1,234번째" in Korean.
  function ordinal(n) {
    const s = num(n);
    if (lang === 'ko') return s + '번째';
    const mod100 = n % 100;
    const mod10 = n % 10;
    let suffix = 'th';
    if (mod100 < 11 || mod100 > 13) {
      if (mod10 === 1) suffix = 'st';
      else if (mod10 === 2) suffix = 'nd';
      else if (mod10 === 3) suffix = 'rd';
    }
    return s + suffix;
  }

  function dateTime(v) {
    const d = new Date(v);
    if (Number.isNaN(d.getTime())) return '';
    return new Intl.DateTimeFormat(locale(), { dateStyle: 'medium', timeStyle: 'short' }).format(d);
  }

  // apply fills every [data-i18n] element with its string and sets the document's language.
  function apply(root) {
    document.documentElement.lang = lang;
    (root || document).querySelectorAll('[data-i18n]').forEach((el) => { el.textContent = t(el.dataset.i18n); });
    const sw = document.getElementById('lang-switch');
    if (sw) {
      const other = lang === 'ko' ? 'en' : 'ko';
      sw.textContent = dict[other].langName;
      sw.lang = other;
      sw.title = dict[lang].langSwitch + ' / ' + dict[other].langSwitch;
      sw.setAttribute('aria-label', dict[other].langSwitch + ': ' + dict[other].langName);
    }
  }

  function set(l) {
    if (!dict[l]) return;
    lang = l;
    try { localStorage.setItem(STORE_KEY, l); } catch (_) { /* private mode: the choice lasts this page */ }
    apply(document);
    listeners.forEach((f) => f(lang));
  }

  function onChange(f) { listeners.push(f); }

  // The scripts load with defer, so the document is parsed by now.
  const sw = document.getElementById('lang-switch');
  if (sw) sw.addEventListener('click', () => set(lang === 'ko' ? 'en' : 'ko'));
  apply(document);

  window.I18N = {
    t, num, ordinal, dateTime, apply, set, onChange,
    get lang() { return lang; },
  };
})();
