// i18n.js: Korean and English strings, number, ordinal and date formatting, and the language switch.
// The language comes from a choice the user made before (localStorage), else from the browser's languages.
// The pages import t, num, ordinal, dateTime, locale and onChange; importing the module also fills the
// page's [data-i18n] elements and wires the language switch.

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
    // The waiting room before the sale opens (the pre-queue), the wait estimate, and a pause.
    prequeueHeading: 'The sale has not opened yet',
    prequeueOpensIn: 'Opens in',
    prequeueOpening: 'Opening now…',
    prequeueFair: 'Everyone who arrives before the opening gets a random place in line when the sale opens. Arriving earlier than others before the opening gives no advantage, so there is no need to rush. People who arrive after the opening join the end of the line.',
    prequeueTotal: (v) => v.n === 1 ? 'When you arrived, you were the only one waiting for the opening.' : `When you arrived, ${v.total} people (you included) were waiting for the opening.`,
    prequeueKeep: 'Keep this page open. A refresh or another tab keeps your entry.',
    'eta.soon': 'Estimated wait: less than a minute',
    'eta.minutes': (v) => v.min === 1 ? 'Estimated wait: about 1 minute' : `Estimated wait: about ${v.min} minutes`,
    'eta.hours': (v) => `Estimated wait: about ${v.h} h ${v.min} min`,
    pausedNotice: 'The organiser has paused admission for a moment. Your place is kept: stay on this page and the line moves on when admission resumes.',
    'announce.opened': (v) => `The sale is open. You are ${v.rank} in line of ${v.total}.`,
    'announce.paused': 'Admission is paused for a moment. Your place is kept.',
    'announce.resumed': 'Admission has resumed.',
    'title.prequeue': (v) => `Opens soon · ${v.name}`,
    'state.paused': 'Paused',
    'state.closed': 'Sale closed',
    // The control room (/admin).
    'admin.title': 'Control room',
    'admin.keyHeading': 'Sign in',
    'admin.keyLabel': 'Admin key',
    'admin.keyHint': 'The key stays in this tab only (sessionStorage) and is sent with every request of this page.',
    'admin.keySubmit': 'Open the control room',
    'admin.checking': 'Checking the key…',
    'admin.keyEmpty': 'Enter the admin key.',
    'admin.wrongKey': 'Wrong key. Enter the admin key again.',
    'admin.off': 'The admin API is off on this server: no admin.key is configured. Set WAITROOM_ADMIN_KEY (at least 16 characters) and restart the server to use the control room.',
    'admin.retry': 'Check again',
    'admin.signOut': 'Forget the key',
    'admin.networkError': 'The server did not answer. Check the connection and try again.',
    'admin.failed': (v) => `The server answered ${v.status}.`,
    'admin.stream.connecting': 'Connecting to the live figures…',
    'admin.stream.open': (v) => `Live · last update ${v.time}`,
    'admin.stream.reconnecting': (v) => v.s > 0 ? `Live figures interrupted · reconnecting in ${v.s} s` : 'Live figures interrupted · reconnecting…',
    'admin.stream.serverError': (v) => `The server could not read the figures: ${v.msg}`,
    'admin.overview': 'All screenings',
    'admin.col.screening': 'Screening',
    'admin.col.state': 'State',
    'admin.col.waiting': 'Waiting',
    'admin.col.active': 'Active',
    'admin.col.sold': 'Sold',
    'admin.noScreenings': 'No screenings yet. Create one below.',
    'admin.selectLabel': 'Screening to watch and control',
    'admin.seatsSold': (v) => `${v.sold} of ${v.total} seats sold`,
    'admin.closedAt': (v) => `Sale closed ${v.time}`,
    'admin.controls': 'Controls',
    'admin.pause': 'Pause admission',
    'admin.resume': 'Resume admission',
    'admin.close': 'Close the sale…',
    'admin.closeTitle': 'Close the sale for good?',
    'admin.closeText': (v) => `This ends the sale of “${v.name}” (${v.id}): nobody more is admitted, everyone in line is told the sale is over, and it cannot be reopened.`,
    'admin.closeConfirm': 'Close the sale',
    'admin.cancel': 'Cancel',
    'admin.sending': 'Sending…',
    'admin.done.pause': (v) => `Admission to ${v.id} is paused.`,
    'admin.done.resume': (v) => `Admission to ${v.id} has resumed.`,
    'admin.done.close': (v) => `The sale of ${v.id} is closed.`,
    'admin.error': (v) => v.code ? `${v.msg} (${v.code})` : v.msg,
    'admin.figures': 'Live figures, last 2 minutes',
    'admin.chart.waiting': 'Waiting in line',
    'admin.chart.admitted': 'Admitted per second',
    'admin.chart.active': 'Active (admitted, booking now)',
    'admin.chart.sold': 'Seats sold',
    'admin.chart.skips': 'Admissions skipped per second, by reason',
    'admin.chart.sockets': 'Open sockets per instance',
    'admin.s.waiting': 'waiting',
    'admin.s.pre': 'pre-queue',
    'admin.s.admitted': 'admitted per second',
    'admin.s.active': 'active',
    'admin.s.maxActive': 'most active at once',
    'admin.s.sold': 'sold',
    'admin.s.seats': 'seats in all',
    'admin.s.allInstances': 'all instances',
    'admin.perSecond': (v) => `${v.n}/s`,
    'admin.inAll': (v) => `${v.n} in all`,
    'admin.ofMax': (v) => `${v.n} of ${v.max}`,
    'admin.noSkips': 'No admission skipped.',
    'admin.noInstances': 'No instance has reported.',
    'admin.noData': 'No figures yet.',
    'admin.seriesAlt': (v) => `${v.name}: now ${v.now}, lowest ${v.min}, highest ${v.max}`,
    'admin.chartAlt': (v) => `${v.title}, last ${v.secs} seconds. ${v.series}.`,
    'admin.ago': (v) => `−${v.n} s`,
    'admin.now': 'now',
    'admin.admissionHeading': 'Admission settings',
    'admin.admissionLead': 'Applied at once, on every instance. Durations are Go durations: 500ms, 1s, 2m, 1h30m.',
    'admin.cur.interval': 'Interval',
    'admin.cur.batch': 'Batch size',
    'admin.cur.maxActive': 'Most active',
    'admin.cur.ttl': 'Turn lasts',
    'admin.f.interval': 'Interval between admissions',
    'admin.f.batch': 'Batch size (most admitted per interval)',
    'admin.f.maxActive': 'Most active at once',
    'admin.f.ttl': 'How long a turn to book lasts',
    'admin.apply': 'Apply now',
    'admin.noChange': 'Nothing to change: the settings are as shown.',
    'admin.badDuration': (v) => `${v.field}: enter a Go duration such as 1s, 500ms or 5m.`,
    'admin.badCount': (v) => `${v.field}: enter a whole number of at least 1.`,
    'admin.saved': (v) => `Applied: every ${v.interval}, ${v.batch} per batch, at most ${v.max} active, turns last ${v.ttl}.`,
    'admin.createHeading': 'New screening',
    'admin.f.id': 'Id (letters, digits, _ and -; used in the link /s/id)',
    'admin.f.name': 'Name',
    'admin.f.starts': 'Starts at (your local time)',
    'admin.f.opens': 'Sale opens at (your local time)',
    'admin.f.layout': 'Seats',
    'admin.f.grid': 'A grid: rows × seats per row',
    'admin.f.list': 'A list of seat ids',
    'admin.f.rows': 'Rows',
    'admin.f.perRow': 'Seats per row',
    'admin.f.seats': 'Seat ids, separated by spaces or commas (A1 A2 B1 …)',
    'admin.f.admission': 'Admission settings (optional: empty fields take the server defaults)',
    'admin.create': 'Create the screening',
    'admin.created': (v) => `Created ${v.id}. It is now selected above.`,
    'admin.badId': 'Id: 1 to 64 letters, digits, _ or -.',
    'admin.badTime': (v) => `${v.field}: enter a date and time.`,
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
    prequeueHeading: '아직 예매가 열리지 않았습니다',
    prequeueOpensIn: '오픈까지',
    prequeueOpening: '지금 오픈하는 중…',
    prequeueFair: '오픈 전에 들어온 모든 분은 예매가 열리는 순간 대기열에서 무작위 순번을 받습니다. 오픈 전에 남보다 일찍 들어와도 유리하지 않으니 서두르지 않으셔도 됩니다. 오픈 후에 들어온 분은 대기열 맨 뒤에 섭니다.',
    prequeueTotal: (v) => v.n === 1 ? '들어왔을 때 오픈을 기다리는 사람은 본인뿐이었습니다.' : `들어왔을 때 본인을 포함해 ${v.total}명이 오픈을 기다리고 있었습니다.`,
    prequeueKeep: '이 페이지를 열어 두세요. 새로고침하거나 다른 탭에서 열어도 대기는 유지됩니다.',
    'eta.soon': '예상 대기 시간: 1분 미만',
    'eta.minutes': (v) => `예상 대기 시간: 약 ${v.min}분`,
    'eta.hours': (v) => `예상 대기 시간: 약 ${v.h}시간 ${v.min}분`,
    pausedNotice: '주최 측에서 입장을 잠시 멈췄습니다. 순번은 유지되니 이 페이지에 머물러 주세요. 입장이 재개되면 대기열이 다시 움직입니다.',
    'announce.opened': (v) => `예매가 열렸습니다. 현재 대기 순번 ${v.rank}, 전체 ${v.total}명입니다.`,
    'announce.paused': '입장이 잠시 멈췄습니다. 순번은 유지됩니다.',
    'announce.resumed': '입장이 재개되었습니다.',
    'title.prequeue': (v) => `오픈 예정 · ${v.name}`,
    'state.paused': '일시 정지',
    'state.closed': '판매 종료',
    'admin.title': '관제실',
    'admin.keyHeading': '로그인',
    'admin.keyLabel': '관리자 키',
    'admin.keyHint': '키는 이 탭에만 보관되며(sessionStorage) 이 페이지의 모든 요청에 함께 보냅니다.',
    'admin.keySubmit': '관제실 열기',
    'admin.checking': '키를 확인하는 중…',
    'admin.keyEmpty': '관리자 키를 입력하세요.',
    'admin.wrongKey': '키가 올바르지 않습니다. 관리자 키를 다시 입력하세요.',
    'admin.off': '이 서버에서는 관리자 API가 꺼져 있습니다(admin.key 미설정). 관제실을 쓰려면 WAITROOM_ADMIN_KEY(16자 이상)를 설정하고 서버를 다시 시작하세요.',
    'admin.retry': '다시 확인',
    'admin.signOut': '키 지우기',
    'admin.networkError': '서버가 응답하지 않습니다. 연결을 확인하고 다시 시도하세요.',
    'admin.failed': (v) => `서버 응답: ${v.status}`,
    'admin.stream.connecting': '실시간 지표에 연결하는 중…',
    'admin.stream.open': (v) => `실시간 · 마지막 갱신 ${v.time}`,
    'admin.stream.reconnecting': (v) => v.s > 0 ? `실시간 지표 끊김 · ${v.s}초 후 다시 연결` : '실시간 지표 끊김 · 다시 연결하는 중…',
    'admin.stream.serverError': (v) => `서버가 지표를 읽지 못했습니다: ${v.msg}`,
    'admin.overview': '전체 상영',
    'admin.col.screening': '상영',
    'admin.col.state': '상태',
    'admin.col.waiting': '대기',
    'admin.col.active': '입장 중',
    'admin.col.sold': '판매',
    'admin.noScreenings': '아직 상영이 없습니다. 아래에서 만드세요.',
    'admin.selectLabel': '지켜보고 제어할 상영',
    'admin.seatsSold': (v) => `전체 ${v.total}석 중 ${v.sold}석 판매`,
    'admin.closedAt': (v) => `판매 종료 ${v.time}`,
    'admin.controls': '제어',
    'admin.pause': '입장 일시 정지',
    'admin.resume': '입장 재개',
    'admin.close': '판매 종료…',
    'admin.closeTitle': '판매를 완전히 종료할까요?',
    'admin.closeText': (v) => `“${v.name}”(${v.id})의 판매를 끝냅니다. 더 이상 입장하지 않고, 대기 중인 모든 분께 판매 종료를 알리며, 다시 열 수 없습니다.`,
    'admin.closeConfirm': '판매 종료',
    'admin.cancel': '취소',
    'admin.sending': '보내는 중…',
    'admin.done.pause': (v) => `${v.id} 입장을 일시 정지했습니다.`,
    'admin.done.resume': (v) => `${v.id} 입장을 재개했습니다.`,
    'admin.done.close': (v) => `${v.id} 판매를 종료했습니다.`,
    'admin.error': (v) => v.code ? `${v.msg} (${v.code})` : v.msg,
    'admin.figures': '실시간 지표, 최근 2분',
    'admin.chart.waiting': '대기 인원',
    'admin.chart.admitted': '초당 입장',
    'admin.chart.active': '입장 중 (예매 진행)',
    'admin.chart.sold': '판매 좌석',
    'admin.chart.skips': '사유별 초당 건너뛴 입장',
    'admin.chart.sockets': '인스턴스별 연결 수',
    'admin.s.waiting': '대기',
    'admin.s.pre': '오픈 전 대기',
    'admin.s.admitted': '초당 입장',
    'admin.s.active': '입장 중',
    'admin.s.maxActive': '동시 입장 한도',
    'admin.s.sold': '판매',
    'admin.s.seats': '전체 좌석',
    'admin.s.allInstances': '전체 인스턴스',
    'admin.perSecond': (v) => `초당 ${v.n}`,
    'admin.inAll': (v) => `누적 ${v.n}`,
    'admin.ofMax': (v) => `${v.n} / ${v.max}`,
    'admin.noSkips': '건너뛴 입장이 없습니다.',
    'admin.noInstances': '보고한 인스턴스가 없습니다.',
    'admin.noData': '아직 지표가 없습니다.',
    'admin.seriesAlt': (v) => `${v.name}: 현재 ${v.now}, 최저 ${v.min}, 최고 ${v.max}`,
    'admin.chartAlt': (v) => `${v.title}, 최근 ${v.secs}초. ${v.series}.`,
    'admin.ago': (v) => `−${v.n}초`,
    'admin.now': '지금',
    'admin.admissionHeading': '입장 설정',
    'admin.admissionLead': '모든 인스턴스에 바로 적용됩니다. 시간은 Go 형식으로 씁니다: 500ms, 1s, 2m, 1h30m.',
    'admin.cur.interval': '간격',
    'admin.cur.batch': '한 번에 입장',
    'admin.cur.maxActive': '동시 입장 한도',
    'admin.cur.ttl': '예매 시간',
    'admin.f.interval': '입장 간격',
    'admin.f.batch': '한 번에 입장하는 최대 인원',
    'admin.f.maxActive': '동시 입장 한도',
    'admin.f.ttl': '입장 후 예매할 수 있는 시간',
    'admin.apply': '바로 적용',
    'admin.noChange': '바꿀 것이 없습니다. 설정은 표시된 그대로입니다.',
    'admin.badDuration': (v) => `${v.field}: 1s, 500ms, 5m 같은 Go 시간 형식으로 입력하세요.`,
    'admin.badCount': (v) => `${v.field}: 1 이상의 정수를 입력하세요.`,
    'admin.saved': (v) => `적용됨: ${v.interval}마다 ${v.batch}명, 동시 입장 최대 ${v.max}명, 예매 시간 ${v.ttl}.`,
    'admin.createHeading': '새 상영',
    'admin.f.id': 'ID (영문자, 숫자, _, -; 주소 /s/ID에 쓰임)',
    'admin.f.name': '이름',
    'admin.f.starts': '상영 시작 (현지 시각)',
    'admin.f.opens': '예매 오픈 (현지 시각)',
    'admin.f.layout': '좌석',
    'admin.f.grid': '격자: 열 수 × 열당 좌석 수',
    'admin.f.list': '좌석 ID 목록',
    'admin.f.rows': '열 수',
    'admin.f.perRow': '열당 좌석 수',
    'admin.f.seats': '좌석 ID, 공백이나 쉼표로 구분 (A1 A2 B1 …)',
    'admin.f.admission': '입장 설정 (선택: 비워 두면 서버 기본값)',
    'admin.create': '상영 만들기',
    'admin.created': (v) => `${v.id}을(를) 만들었습니다. 위에서 선택되어 있습니다.`,
    'admin.badId': 'ID: 영문자, 숫자, _, - 로 1~64자.',
    'admin.badTime': (v) => `${v.field}: 날짜와 시각을 입력하세요.`,
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

export function locale() { return lang === 'ko' ? 'ko-KR' : 'en-US'; }

export function t(key, vars) {
  let s = dict[lang][key];
  if (s === undefined) s = dict.en[key];
  if (s === undefined) return key;
  if (typeof s === 'function') return s(vars || {});
  return s.replace(/\{(\w+)\}/g, (m, k) => (vars && k in vars ? String(vars[k]) : m));
}

export function num(n) { return new Intl.NumberFormat(locale()).format(n); }

// ordinal is "1st", "2nd", "3rd", "11th", "1,234th" in English and "1,234번째" in Korean.
export function ordinal(n) {
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

export function dateTime(v) {
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

export function onChange(f) { listeners.push(f); }

// Module scripts run once the document is parsed, so the switch and the [data-i18n] elements are there.
const sw = document.getElementById('lang-switch');
if (sw) sw.addEventListener('click', () => set(lang === 'ko' ? 'en' : 'ko'));
apply(document);
