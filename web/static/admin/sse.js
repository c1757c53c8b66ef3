// sse.js: a parser of text/event-stream, for a stream read with fetch (EventSource cannot send the admin
// key).

// sseParser reads text/event-stream: lines ending in LF, CRLF or CR; "field: value"; a blank line ends an
// event. It calls dispatch(type, data) for each event that carried data.
export function sseParser(dispatch) {
  let buf = '';
  let skipLF = false; // the last chunk ended with CR: an LF that starts the next one belongs to it
  let data = [];
  let type = '';
  function line(l) {
    if (l === '') {
      if (data.length) dispatch(type || 'message', data.join('\n'));
      data = [];
      type = '';
      return;
    }
    if (l[0] === ':') return; // a comment
    const i = l.indexOf(':');
    const field = i < 0 ? l : l.slice(0, i);
    let value = i < 0 ? '' : l.slice(i + 1);
    if (value[0] === ' ') value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') type = value;
    // id and retry are not used: the page keeps no event ids and chooses its own backoff.
  }
  return {
    push(chunk) {
      if (skipLF && chunk[0] === '\n') chunk = chunk.slice(1);
      skipLF = false;
      buf += chunk;
      let start = 0;
      for (let i = 0; i < buf.length; i++) {
        const c = buf[i];
        if (c !== '\n' && c !== '\r') continue;
        line(buf.slice(start, i));
        if (c === '\r') {
          if (i + 1 < buf.length) {
            if (buf[i + 1] === '\n') i++;
          } else {
            skipLF = true;
          }
        }
        start = i + 1;
      }
      buf = buf.slice(start);
    },
  };
}
