// chatlog's page: a small app on the justlog/rustlog HTTP API of `chatlog serve` (no build step, no CDN).
//
// Views, from the query: no channel: the channel picker; ?channel=C[&date=YYYY-MM-DD]: a UTC day of the
// channel (its newest day without a date; today's is followed live from /api/live/C);
// ?channel=C&user=U[&month=YYYY-MM]: a user's month (the newest without a month); ?channel=C&q=TEXT
// [&user=U | &date=D]: search hits, highlighted. Lines come as ndjson (the API's ?web format: the fields
// the page shows, no IRC line to parse here), read while they arrive, and are shown in blocks of BLOCK
// lines of which only those near the viewport are in the DOM.
"use strict";

(() => {
  const BLOCK = 100; // lines per block of the list
  const OVERSCAN = 1; // viewport heights kept rendered above and below the viewport
  const SEARCH_LIMIT = 1000;
  const BATCH = 500; // lines parsed and added at once
  const SLICE_MS = 12; // longest parsing between two chances for the page to draw
  const DAY_MS = 86400000;
  const EMOTE_URL = "https://static-cdn.jtvnw.net/emoticons/v2/{id}/default/dark/1.0";
  const TYPE = { PRIVMSG: 1, CLEARCHAT: 2, USERNOTICE: 4, CLEARMSG: 13 };
  const DEFAULT_COLORS = [
    "#FF0000", "#0000FF", "#008000", "#B22222", "#FF7F50", "#9ACD32", "#FF4500", "#2E8B57",
    "#DAA520", "#D2691E", "#5F9EA0", "#1E90FF", "#FF69B4", "#8A2BE2", "#00FF7F",
  ];
  const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
  const URL_RE = /(https?:\/\/[^\s<>"']+[^\s<>"'.,;:!?)\]}])/i;

  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  };

  // ---------------------------------------------------------------------------------- text and time
  const iso = (ms) => new Date(ms).toISOString();
  const ymd = (ms) => iso(ms).slice(0, 10);
  const hms = (ms) => iso(ms).slice(11, 19);
  const todayUTC = () => ymd(Date.now());
  const dayStart = (date) => Date.parse(`${date}T00:00:00Z`);

  function escapeControls(text) {
    return text.replace(CONTROLS, (c) => {
      if (c === "\t") return "\\t";
      if (c === "\n") return "\\n";
      if (c === "\r") return "\\r";
      const code = c.charCodeAt(0);
      return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
    });
  }

  // The line of the text format of the API (justlog's): `[2024-01-02 15:04:05] #channel user: text`.
  function textLine(r) {
    const head = `[${ymd(r.t)} ${hms(r.t)}] #${r.channel}`;
    if (r.type === TYPE.CLEARMSG) return escapeControls(`${head} ${r.sys}${r.text ? `: ${r.text}` : ""}`);
    return escapeControls(r.login ? `${head} ${r.login}: ${r.text}` : `${head} ${r.text}`);
  }

  // What a gap says of the peers its lines were filled from (`chatlog fill`): `; filled from https://peer`.
  function filledNote(g) {
    const peers = g.filled_from || [];
    return peers.length ? `; filled from ${peers.join(", ")}` : "";
  }

  // A gap as `chatlog logs` marks it (the downloaded text): `-- not logged 10:00:00-10:30:00 (1800 s): ...`.
  function gapText(g, dated) {
    const at = (ms) => (dated ? `${ymd(ms)} ${hms(ms)}` : hms(ms));
    return `-- not logged ${at(g.start)}-${at(g.end)} (${Math.round((g.end - g.start) / 1000)} s): no logger (${g.why})${filledNote(g)} --`;
  }

  function duration(ms) {
    const s = Math.round(ms / 1000);
    if (s < 120) return `${s} s`;
    const min = Math.round(s / 60);
    if (min < 120) return `${min} min`;
    const h = Math.floor(min / 60);
    if (h < 48) return `${h} h ${min % 60} min`;
    return `${Math.floor(h / 24)} d ${h % 24} h`;
  }

  // A gap as the page shows it.
  function gapShown(g, dated) {
    const at = (ms) => (dated ? `${ymd(ms)} ${hms(ms)}` : hms(ms));
    return `not logged ${at(g.start)} to ${at(g.end)} (${duration(g.end - g.start)}): no logger (${g.why})${filledNote(g)}`;
  }

  // One message of the API's web format (or of /api/live) as the list keeps it: the API sends what the
  // page shows, so no IRC line is parsed here.
  function record(m) {
    const tags = m.tags || {};
    const r = {
      t: Date.parse(m.timestamp),
      id: m.id || tags.id || "",
      type: m.type,
      channel: m.channel || "",
      login: m.username || "",
      name: m.displayName || m.username || "",
      color: tags.color || "",
      text: m.text || "",
      emotes: tags.emotes || "",
      sys: m.systemText || "",
      action: m.action === true,
      target: "",
    };
    if (r.type === TYPE.CLEARMSG) {
      r.target = tags["target-msg-id"] || "";
      r.text = m.deletedText || ""; // the API's text of a deletion is "" (rustlog's)
    }
    else if (r.type === TYPE.CLEARCHAT) r.target = tags["target-user-id"] || "";
    return r;
  }

  // ---------------------------------------------------------------------------------------- colours
  const colors = new Map();
  function channelLum(v) {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  }
  function luminance([r, g, b]) {
    return 0.2126 * channelLum(r) + 0.7152 * channelLum(g) + 0.0722 * channelLum(b);
  }
  const hex = (rgb) => `#${rgb.map((v) => Math.round(v).toString(16).padStart(2, "0")).join("")}`;
  const mix = (rgb, to, k) => rgb.map((v, i) => v + (to[i] - v) * k);
  // The colour as given when it reads well on the theme's background, else mixed towards white (dark
  // theme) or black (light theme) until it does: [light theme's, dark theme's].
  function readable(color) {
    let pair = colors.get(color);
    if (pair) return pair;
    const rgb = [1, 3, 5].map((i) => parseInt(color.slice(i, i + 2), 16));
    let light = rgb;
    for (let k = 0.1; luminance(light) > 0.4 && k <= 1; k += 0.1) light = mix(rgb, [0, 0, 0], k);
    let dark = rgb;
    for (let k = 0.1; luminance(dark) < 0.12 && k <= 1; k += 0.1) dark = mix(rgb, [255, 255, 255], k);
    pair = [hex(light), hex(dark)];
    colors.set(color, pair);
    return pair;
  }
  function userColor(r) {
    if (/^#[0-9a-fA-F]{6}$/.test(r.color)) return r.color;
    let h = 0;
    for (const ch of r.login || r.name) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
    return DEFAULT_COLORS[h % DEFAULT_COLORS.length];
  }

  // ----------------------------------------------------------------------------- emotes, hits, links
  // Twitch's emotes tag: `id:start-end,start-end/id2:...`, positions in code points, ends included.
  function emoteRanges(tag, length) {
    const out = [];
    for (const part of tag.split("/")) {
      const colon = part.lastIndexOf(":");
      if (colon <= 0) continue;
      const id = part.slice(0, colon);
      for (const span of part.slice(colon + 1).split(",")) {
        const m = /^(\d+)-(\d+)$/.exec(span);
        if (!m) continue;
        const start = Number(m[1]);
        const end = Number(m[2]);
        if (start <= end && end < length) out.push([start, end, id]);
      }
    }
    out.sort((a, b) => a[0] - b[0]);
    const kept = [];
    let last = -1;
    for (const r of out) {
      if (r[0] > last) {
        kept.push(r);
        last = r[1];
      }
    }
    return kept;
  }

  function highlighted(parent, text) {
    const hit = view.hit;
    if (!hit || !text) {
      parent.append(text);
      return;
    }
    const parts = text.split(hit.split);
    for (let i = 0; i < parts.length; i++) {
      if (!parts[i]) continue;
      if (i % 2) parent.append(el("mark", "", parts[i]));
      else parent.append(parts[i]);
    }
  }

  function plain(parent, text) {
    text = escapeControls(text);
    if (!URL_RE.test(text)) {
      highlighted(parent, text);
      return;
    }
    const parts = text.split(URL_RE);
    for (let i = 0; i < parts.length; i++) {
      if (!parts[i]) continue;
      if (i % 2) {
        const a = el("a");
        a.href = parts[i];
        a.rel = "nofollow noopener noreferrer";
        a.target = "_blank";
        highlighted(a, parts[i]);
        parent.append(a);
      } else highlighted(parent, parts[i]);
    }
  }

  function messageText(parent, text, emotes) {
    if (!emotes) {
      plain(parent, text);
      return;
    }
    const points = Array.from(text);
    let at = 0;
    for (const [start, end, id] of emoteRanges(emotes, points.length)) {
      if (start > at) plain(parent, points.slice(at, start).join(""));
      const name = points.slice(start, end + 1).join("");
      const img = el("img", "emote");
      img.alt = name;
      img.title = name;
      img.src = EMOTE_URL.replace("{id}", encodeURIComponent(id));
      img.decoding = "async";
      img.dataset.emoteId = id;
      if (view.hit && view.hit.test.test(name)) img.classList.add("hit");
      parent.append(img);
      at = end + 1;
    }
    if (at < points.length) plain(parent, points.slice(at).join(""));
  }

  // ------------------------------------------------------------------------------------ one line
  function link(params) {
    return `/?${new URLSearchParams(params)}`;
  }

  function timeNode(r) {
    if (!view.dated) {
      const t = el("time", "ts", hms(r.t));
      t.dateTime = iso(r.t);
      return t;
    }
    const a = el("a", "ts", `${ymd(r.t)} ${hms(r.t)}`);
    a.href = link({ channel: r.channel || view.channel, date: ymd(r.t) });
    a.title = "This day of the channel";
    return a;
  }

  function nameNode(r) {
    const a = el("a", "name", r.name || r.login);
    a.href = link({ channel: r.channel || view.channel, user: r.login });
    a.title = r.login && r.name.toLowerCase() !== r.login ? `${r.login}'s lines` : "Their lines";
    return a;
  }

  function gapNode(g) {
    const node = el("div", "line gap", gapShown(g, view.dated));
    const filled = (g.filled_from || []).length > 0;
    if (filled) node.classList.add("filled");
    node.title = filled
      ? "No logger of ours was in the channel then: the lines of this time were imported from the peer named"
      : "No logger was in the channel then: lines of this time are missing";
    return node;
  }

  function lineNode(r) {
    const line = el("div", "line");
    if (r.id) line.dataset.id = r.id;
    line.append(timeNode(r), " ");
    if (r.type === TYPE.CLEARCHAT) {
      line.classList.add("sys", "ban");
      line.append(el("span", "text", escapeControls(r.text)));
      return line;
    }
    if (r.type === TYPE.CLEARMSG) {
      line.classList.add("sys", "clearmsg");
      line.append(el("span", "sysmsg", `${r.name || r.login || "a user"}'s message was deleted: `));
      const old = el("s", "text");
      messageText(old, r.text, "");
      line.append(old);
      return line;
    }
    if (!r.login && !r.name) {
      line.classList.add("sys");
      const text = el("span", "text");
      plain(text, r.text);
      line.append(text);
      return line;
    }
    const [light, dark] = readable(userColor(r));
    line.style.setProperty("--cl", light);
    line.style.setProperty("--cd", dark);
    let message = r.text;
    if (r.type === TYPE.USERNOTICE) {
      line.classList.add("notice");
      if (r.sys) {
        line.append(el("span", "sysmsg", escapeControls(r.sys)), " ");
        message = r.text.startsWith(r.sys) ? r.text.slice(r.sys.length + 1) : r.text;
      }
      if (!message) return line;
    }
    if (r.action) line.classList.add("action");
    if (r.live) line.classList.add("live-new");
    if (view.deleted.has(r.id)) line.classList.add("deleted");
    line.append(nameNode(r));
    if (!r.action) line.append(": ");
    else line.append(" ");
    const text = el("span", "text");
    messageText(text, message, r.emotes);
    line.append(text);
    return line;
  }

  // ------------------------------------------------------------------------ the list, in blocks
  // Lines are grouped in blocks of BLOCK; a block near the viewport holds its lines, any other one is
  // an empty div as high as its lines were (or are estimated to be). The DOM holds a few hundred lines
  // whatever the length of the list. Gaps in coverage (which may come after the lines) are shown before
  // the first line at or after their start; those after the last line, in the tail once all are in.
  class LogView {
    constructor(root) {
      this.root = root;
      this.avg = 21;
      this.reset();
      const again = () => {
        this.schedule();
        this.onScroll();
      };
      addEventListener("scroll", again, { passive: true });
      addEventListener("resize", again);
    }

    reset() {
      this.items = [];
      this.index = new Map();
      this.blocks = [];
      this.shown = new Set();
      this.measuredHeight = 0;
      this.measuredLines = 0;
      this.gaps = null; // sorted by start; those from nextGap on are not placed yet
      this.nextGap = 0;
      this.before = new Map(); // line index -> the gaps shown before it
      this.tail = el("div", "tail");
      this.root.replaceChildren(this.tail);
      this.onFirstPaint = null;
      this.complete = false;
    }

    push(items) {
      if (!items.length) return;
      const first = this.items.length;
      let touched = null;
      for (const item of items) {
        let block = this.blocks[this.blocks.length - 1];
        if (!block || block.count >= BLOCK) {
          if (touched && !touched.shown) this.estimate(touched);
          block = { index: this.blocks.length, start: this.items.length, count: 0, shown: false, height: -1 };
          block.el = el("div", "block");
          this.blocks.push(block);
          this.root.insertBefore(block.el, this.tail);
        }
        if (item.id) this.index.set(item.id, this.items.length);
        this.items.push(item);
        block.count++;
        if (block.shown) block.el.append(lineNode(item));
        touched = block;
      }
      if (touched && !touched.shown) this.estimate(touched);
      this.place(first);
      this.schedule();
      if (!this.buttonPending) {
        this.buttonPending = true;
        setTimeout(() => {
          this.buttonPending = false;
          this.onScroll();
        }, 250);
      }
    }

    onScroll() {
      const latest = $("latest");
      const hide = !this.items.length || this.atBottom();
      if (latest.dataset.away !== String(!hide)) latest.dataset.away = String(!hide);
    }

    estimate(block) {
      block.el.style.height = `${Math.round(block.count * this.avg)}px`;
    }

    setGaps(gaps) {
      this.gaps = gaps.slice().sort((x, y) => x.start - y.start);
      this.nextGap = 0;
      this.place(0);
    }

    // Places the gaps not placed yet before the first line (from index `from`) at or after their start.
    place(from) {
      if (!this.gaps) return;
      const redraw = new Set();
      while (this.nextGap < this.gaps.length) {
        const gap = this.gaps[this.nextGap];
        let a = from;
        let z = this.items.length;
        while (a < z) {
          const mid = (a + z) >> 1;
          if (this.items[mid].t < gap.start) a = mid + 1;
          else z = mid;
        }
        if (a >= this.items.length) break;
        if (!this.before.has(a)) this.before.set(a, []);
        this.before.get(a).push(gap);
        const block = this.blocks[Math.floor(a / BLOCK)];
        if (block.shown) redraw.add(block);
        else this.estimate(block);
        this.nextGap++;
        from = a;
      }
      for (const block of redraw) block.el.replaceChildren(this.fill(block));
      this.drawTail();
    }

    finish() {
      this.complete = true;
      this.drawTail();
      this.schedule();
    }

    drawTail() {
      const rest = this.complete && this.gaps ? this.gaps.slice(this.nextGap) : [];
      if (rest.length || this.tail.firstChild) this.tail.replaceChildren(...rest.map(gapNode));
    }

    gapCount() {
      return this.gaps ? this.gaps.length : 0;
    }

    fill(block) {
      const frag = document.createDocumentFragment();
      for (let j = block.start; j < block.start + block.count; j++) {
        const gaps = this.before.get(j);
        if (gaps) for (const gap of gaps) frag.append(gapNode(gap));
        frag.append(lineNode(this.items[j]));
      }
      return frag;
    }

    // The lines and gaps as the text format has them.
    text() {
      const out = [];
      this.items.forEach((item, j) => {
        for (const gap of this.before.get(j) || []) out.push(gapText(gap, true));
        out.push(textLine(item));
      });
      if (this.complete && this.gaps) for (const gap of this.gaps.slice(this.nextGap)) out.push(gapText(gap, true));
      return out;
    }

    schedule() {
      if (this.pending) return;
      this.pending = true;
      requestAnimationFrame(() => this.update());
    }

    update() {
      this.pending = false;
      const blocks = this.blocks;
      if (!blocks.length) return;
      const top = scrollY - (this.root.getBoundingClientRect().top + scrollY);
      const lo = top - innerHeight * OVERSCAN;
      const hi = top + innerHeight * (1 + OVERSCAN);
      let a = 0;
      let z = blocks.length - 1;
      while (a < z) {
        const mid = (a + z) >> 1;
        const b = blocks[mid].el;
        if (b.offsetTop + b.offsetHeight <= lo) a = mid + 1;
        else z = mid;
      }
      let last = a;
      while (last + 1 < blocks.length && blocks[last + 1].el.offsetTop < hi) last++;
      const hide = [];
      for (const block of this.shown) {
        if (block.index < a || block.index > last) hide.push([block, block.el.offsetHeight]);
      }
      for (const [block, height] of hide) {
        block.el.replaceChildren();
        block.el.style.height = `${height}px`;
        block.shown = false;
        this.shown.delete(block);
      }
      const fresh = [];
      for (let i = a; i <= last; i++) {
        const block = blocks[i];
        if (block.shown) continue;
        block.el.replaceChildren(this.fill(block));
        block.el.style.height = "";
        block.shown = true;
        this.shown.add(block);
        fresh.push(block);
      }
      if (this.onFirstPaint && (this.complete || this.items.length * 18 >= innerHeight)) {
        const done = this.onFirstPaint;
        this.onFirstPaint = null;
        requestAnimationFrame(() => done());
      }
      if (!fresh.length) return;
      for (const block of fresh) {
        if (block.height < 0 && block.count === BLOCK) {
          block.height = block.el.offsetHeight;
          this.measuredHeight += block.height;
          this.measuredLines += block.count;
          this.avg = this.measuredHeight / this.measuredLines;
        }
      }
      this.schedule(); // what was drawn may have moved the rest: until nothing changes
    }

    refresh(id) {
      const node = this.root.querySelector(`.line[data-id="${CSS.escape(id)}"]`);
      if (!node) return;
      const index = this.index.get(id);
      if (index !== undefined) node.replaceWith(lineNode(this.items[index]));
    }

    atBottom() {
      return innerHeight + scrollY >= document.documentElement.scrollHeight - 80;
    }

    toBottom(tries = 4) {
      scrollTo(0, document.documentElement.scrollHeight);
      if (tries > 0) requestAnimationFrame(() => requestAnimationFrame(() => this.toBottom(tries - 1)));
    }
  }

  // -------------------------------------------------------------------------------- the API
  class HttpError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  async function failure(res) {
    let message = `${res.status} ${res.statusText}`;
    try {
      const body = await res.json();
      if (body && body.message) message = body.message;
    } catch (_) { /* not JSON */ }
    return new HttpError(res.status, message);
  }

  async function getJSON(url, signal) {
    const res = await fetch(url, { signal });
    if (!res.ok) throw await failure(res);
    return res.json();
  }

  // Back to the event loop (the page draws and answers the reader), then on.
  const breathe = () => new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => resolve();
    channel.port2.postMessage(0);
  });
  const painted = () => new Promise((resolve) => {
    requestAnimationFrame(() => setTimeout(resolve, 0));
    setTimeout(resolve, 100); // a hidden tab draws no frames
  });

  // The ndjson lines of `url`, handed to `onBatch` as records while they arrive (onStart first, with the
  // response's URL). The first batch is drawn before the next is read; then the parsing stops every
  // SLICE_MS for the page to draw, however fast the lines come (a preloaded answer comes at once).
  async function streamLines(url, signal, onStart, onBatch) {
    const res = await fetch(url, { signal });
    if (!res.ok) throw await failure(res);
    await onStart(res.url);
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let rest = "";
    let first = true;
    let since = performance.now();
    const parse = async (text) => {
      const lines = text.split("\n");
      for (let i = 0; i < lines.length; i += BATCH) {
        const batch = [];
        for (const line of lines.slice(i, i + BATCH)) if (line) batch.push(record(JSON.parse(line)));
        onBatch(batch);
        if (first) {
          first = false;
          await painted();
          since = performance.now();
        } else if (performance.now() - since > SLICE_MS) {
          await breathe();
          since = performance.now();
        }
      }
    };
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += decoder.decode(value, { stream: true });
      const cut = rest.lastIndexOf("\n");
      if (cut < 0) continue;
      const text = rest.slice(0, cut);
      rest = rest.slice(cut + 1);
      await parse(text);
    }
    rest += decoder.decode();
    if (rest.trim()) {
      try {
        await parse(rest);
      } catch (_) {
        throw new Error("the server cut the answer short; reload to try again");
      }
    }
  }

  const enc = encodeURIComponent;
  let channelList = null;
  async function channels() {
    if (!channelList) {
      channelList = getJSON("/channels").then((body) =>
        body.channels.map((c) => c.name).sort((x, y) => x.localeCompare(y)),
      );
      channelList.catch(() => { channelList = null; });
    }
    return channelList;
  }

  // ---------------------------------------------------------------------------------- the view
  const list = new LogView($("log"));
  let view = {};
  let firstScreen = true;

  function status(text, { error = false, live = false } = {}) {
    const node = $("status");
    node.classList.toggle("error", error);
    node.replaceChildren();
    if (live) node.append(el("span", "live", "● live "));
    node.append(text);
  }

  function countText() {
    const n = view.lines;
    const what = view.kind === "search" ? (n === 1 ? "hit" : "hits") : n === 1 ? "line" : "lines";
    let text = `${view.title}: ${n.toLocaleString("en")} ${what}`;
    if (!n && !view.loading && view.kind === "day" && !view.live) text = `Nothing logged in #${view.channel} on ${view.date}`;
    if (view.loading) text += " (loading…)";
    if (view.kind === "search" && n >= SEARCH_LIMIT) text += ` (the first ${SEARCH_LIMIT})`;
    const gaps = list.gapCount();
    if (gaps) text += `, ${gaps} gap${gaps > 1 ? "s" : ""} in coverage`;
    return text;
  }

  function showCount() {
    if (view.failed) return; // the status says why
    status(countText(), { live: view.liveOn });
  }

  function newView(params) {
    if (view.abort) view.abort.abort();
    if (view.source) view.source.close();
    list.reset();
    $("log").dataset.state = "loading";
    view = {
      params,
      abort: new AbortController(),
      channel: (params.get("channel") || "").trim().replace(/^#/, "").toLowerCase(),
      user: (params.get("user") || "").trim().replace(/^@/, "").toLowerCase(),
      date: params.get("date") || "",
      month: params.get("month") || "",
      q: params.get("q") || "",
      kind: "home",
      dated: false,
      lines: 0,
      ids: new Set(),
      deleted: new Set(),
      hit: null,
      loading: false,
      liveOn: false,
      title: "",
    };
    return view;
  }

  function setNav(prev, next) {
    for (const [node, target] of [[$("prev"), prev], [$("next"), next]]) {
      if (target) {
        node.href = target;
        node.removeAttribute("aria-disabled");
      } else {
        node.removeAttribute("href");
        node.setAttribute("aria-disabled", "true");
      }
    }
  }

  function chrome(v) {
    const inChannel = Boolean(v.channel);
    $("picker").hidden = inChannel;
    $("log").hidden = !inChannel;
    $("nav").hidden = !inChannel || v.kind === "search";
    $("date").hidden = v.kind !== "day";
    $("month").hidden = v.kind !== "user";
    $("userform").hidden = !inChannel;
    $("searchform").hidden = !inChannel;
    $("download").hidden = !inChannel;
    $("latest").hidden = !inChannel;
    $("q").value = v.q;
    $("q").placeholder = v.user ? `search ${v.user}'s lines` : "search (/)";
    $("user").value = v.kind === "user" || (v.kind === "search" && v.user) ? v.user : "";
    $("date").value = v.kind === "day" ? v.date : "";
    $("month").value = v.kind === "user" ? v.month : "";
    setNav(null, null);
    if ($("channel").value !== v.channel) fillPicker([], v.channel);
    channels()
      .then((names) => fillPicker(names, v.channel))
      .catch(() => {});
  }

  function fillPicker(names, current) {
    const select = $("channel");
    const options = [el("option", "", "channel…")];
    options[0].value = "";
    for (const name of names) {
      const option = el("option", "", `#${name}`);
      option.value = name;
      options.push(option);
    }
    if (current && !names.includes(current)) {
      const option = el("option", "", `#${current}`);
      option.value = current;
      options.push(option);
    }
    select.replaceChildren(...options);
    select.value = current || "";
  }

  async function showHome(v) {
    document.title = "chatlog";
    status("Loading the channels…");
    let names;
    try {
      names = await channels();
    } catch (err) {
      status(`The channel list did not load: ${err.message}`, { error: true });
      return;
    }
    if (v !== view) return;
    const ul = $("channels");
    ul.replaceChildren(
      ...names.map((name) => {
        const li = el("li");
        const a = el("a", "", `#${name}`);
        a.href = link({ channel: name });
        li.append(a);
        return li;
      }),
    );
    status(names.length ? `${names.length} channel${names.length > 1 ? "s" : ""} with logs` : "No channel has logs yet.");
    filterChannels();
  }

  function filterChannels() {
    const wanted = $("filter").value.trim().toLowerCase().replace(/^#/, "");
    for (const li of $("channels").children) li.hidden = Boolean(wanted) && !li.textContent.includes(wanted);
  }

  function notFound(v, err) {
    if (err.name === "AbortError" || v !== view) return;
    v.failed = true;
    status(err.message || String(err), { error: true });
    if (err.status === 404) {
      document.title = "not found · chatlog";
      document.documentElement.dataset.notFound = "1";
    }
  }

  function addRecords(v, records, { live = false } = {}) {
    if (v !== view) return;
    const items = [];
    const follow = live && list.atBottom();
    for (const r of records) {
      if (r.id) {
        if (v.ids.has(r.id)) continue;
        v.ids.add(r.id);
      }
      items.push(r);
      v.lines++;
      if (r.type === TYPE.CLEARMSG && r.target && !v.deleted.has(r.target)) {
        v.deleted.add(r.target);
        if (v.ids.has(r.target)) v.refreshLater = [...(v.refreshLater || []), r.target];
      }
    }
    list.push(items);
    for (const id of v.refreshLater || []) list.refresh(id);
    v.refreshLater = null;
    if (follow) list.toBottom(1);
    showCount();
  }

  // The gaps of [lo, hi) into the list when they come (the lines do not wait for them).
  async function readGaps(v, lo, hi) {
    try {
      const body = await getJSON(`/web/gaps?channel=${enc(v.channel)}&from=${lo}&to=${hi}`, v.abort.signal);
      if (v !== view) return;
      list.setGaps(body.gaps || []);
      showCount();
    } catch (err) {
      if (err.name !== "AbortError") console.warn("gaps:", err.message);
    }
  }

  function markFirstScreen() {
    if (!firstScreen) return;
    firstScreen = false;
    list.onFirstPaint = () => {
      document.documentElement.dataset.firstScreenMs = String(Math.round(performance.now()));
    };
  }

  // Reads `url` into the list (gaps of [lo, hi) merged in when `gapsFor` gives the range).
  async function load(v, url, gapsFor) {
    v.loading = true;
    markFirstScreen();
    $("log").dataset.state = "loading";
    const early = gapsFor ? gapsFor(null) : null;
    let gaps = early ? readGaps(v, early[0], early[1]) : null;
    await streamLines(
      url,
      v.abort.signal,
      async (finalUrl) => {
        const range = !gaps && gapsFor ? gapsFor(finalUrl) : null;
        if (range) gaps = readGaps(v, range[0], range[1]);
      },
      (batch) => addRecords(v, batch),
    );
    if (v !== view) return;
    v.loading = false;
    if (gaps) await gaps;
    if (v !== view) return;
    list.finish();
    if (v.source && !v.touched) list.toBottom(); // a live page starts at its newest lines, and follows them
    $("log").dataset.state = "done";
    showCount();
  }

  async function dayView(v) {
    v.kind = "day";
    const days = getJSON(`/list?channel=${enc(v.channel)}`, v.abort.signal)
      .then((body) => body.availableLogs.map((d) => `${d.year}-${String(d.month).padStart(2, "0")}-${String(d.day).padStart(2, "0")}`))
      .catch(() => []);
    if (v.date && !/^\d{4}-\d{2}-\d{2}$/.test(v.date)) throw new HttpError(400, `not a date: ${v.date} (expected YYYY-MM-DD)`);
    const dayUrl = (date) => `/channel/${enc(v.channel)}/${date.slice(0, 4)}/${Number(date.slice(5, 7))}/${Number(date.slice(8, 10))}`;
    const url = v.date ? `${dayUrl(v.date)}?web` : `/channel/${enc(v.channel)}?web`;
    const setDate = (date) => {
      v.date = date;
      v.title = `#${v.channel} ${date}`;
      document.title = `${v.title} · chatlog`;
      $("date").value = date;
      v.live = date === todayUTC();
      if (v.live && !v.source) follow(v, (r) => ymd(r.t) === v.date);
      days.then((all) => dayNav(v, all));
    };
    if (v.date) setDate(v.date);
    const gapsFor = (finalUrl) => {
      if (!finalUrl && !v.date) return null;
      if (!v.date) {
        const m = /\/(\d{4})\/(\d{1,2})\/(\d{1,2})(?:\?|$)/.exec(new URL(finalUrl).pathname + "?");
        if (m) setDate(`${m[1]}-${m[2].padStart(2, "0")}-${m[3].padStart(2, "0")}`);
      }
      const lo = dayStart(v.date);
      return [lo, lo + DAY_MS];
    };
    status(`#${v.channel}: loading…`);
    try {
      await load(v, url, gapsFor);
    } catch (err) {
      if (err.status === 404 && v.date && !/is not logged/.test(err.message)) {
        v.loading = false;
        v.lines = 0;
        list.finish(); // the day's gaps, asked for with the lines, show when they come
        showCount();
        $("log").dataset.state = "done";
        return;
      }
      throw err;
    }
  }

  function dayNav(v, days) {
    if (v !== view) return;
    const older = days.filter((d) => d < v.date);
    const newer = days.filter((d) => d > v.date);
    const prev = older.length ? older[0] : null;
    let next = newer.length ? newer[newer.length - 1] : null;
    const today = todayUTC();
    if (!next && v.date < today) next = today;
    setNav(prev && link({ channel: v.channel, date: prev }), next && link({ channel: v.channel, date: next }));
  }

  async function userView(v) {
    v.kind = "user";
    v.dated = true;
    const body = await getJSON(`/list?channel=${enc(v.channel)}&user=${enc(v.user)}`, v.abort.signal);
    const months = body.availableLogs.map((m) => `${m.year}-${String(m.month).padStart(2, "0")}`);
    if (v.month && !/^\d{4}-\d{2}$/.test(v.month)) throw new HttpError(400, `not a month: ${v.month} (expected YYYY-MM)`);
    if (!v.month) v.month = months[0];
    $("month").value = v.month;
    v.title = `${v.user} in #${v.channel}, ${v.month}`;
    document.title = `${v.title} · chatlog`;
    const older = months.filter((m) => m < v.month);
    const newer = months.filter((m) => m > v.month);
    const at = (month) => link({ channel: v.channel, user: v.user, month });
    setNav(older.length ? at(older[0]) : null, newer.length ? at(newer[newer.length - 1]) : null);
    const [y, m] = [Number(v.month.slice(0, 4)), Number(v.month.slice(5, 7))];
    const lo = Date.UTC(y, m - 1, 1);
    const hi = Date.UTC(y, m, 1);
    status(`${v.title}: loading…`);
    if (v.month === ymd(Date.now()).slice(0, 7)) follow(v, (r) => ymd(r.t).startsWith(v.month), v.user);
    try {
      await load(v, `/channel/${enc(v.channel)}/user/${enc(v.user)}/${y}/${m}?web`, () => [lo, hi]);
    } catch (err) {
      if (err.status === 404 && !months.includes(v.month)) {
        throw new HttpError(404, `Nothing of ${v.user} in #${v.channel} in ${v.month}.`);
      }
      throw err;
    }
  }

  async function searchView(v) {
    v.kind = "search";
    v.dated = true;
    const folded = v.q.normalize("NFC").replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    v.hit = { split: new RegExp(`(${folded})`, "iu"), test: new RegExp(folded, "iu") };
    let url;
    if (v.user) {
      url = `/channel/${enc(v.channel)}/user/${enc(v.user)}/search?q=${enc(v.q)}`;
      v.title = `“${v.q}” in ${v.user}'s lines in #${v.channel}`;
    } else {
      url = `/channel/${enc(v.channel)}/search?q=${enc(v.q)}`;
      v.title = `“${v.q}” in #${v.channel}`;
      if (/^\d{4}-\d{2}-\d{2}$/.test(v.date)) {
        const lo = dayStart(v.date);
        url += `&from=${new Date(lo).toISOString()}&to=${new Date(lo + DAY_MS - 1).toISOString()}`;
        v.title += ` on ${v.date}`;
      } else v.title += " (the last day)";
    }
    document.title = `${v.title} · chatlog`;
    status(`${v.title}: searching…`);
    try {
      await load(v, `${url}&web&reverse&limit=${SEARCH_LIMIT}`, null);
    } catch (err) {
      if (err.status === 404 && !/is not logged|nothing stored/.test(err.message)) {
        v.loading = false;
        $("log").dataset.state = "done";
        status(`${v.title}: no hits.`);
        return;
      }
      throw err;
    }
  }

  // Follows /api/live/{channel}[?user=]: lines that `keep` accepts are added (deduplicated by id) once
  // the stored lines are in; those arriving before wait.
  function follow(v, keep, user = "") {
    if (typeof EventSource === "undefined") return;
    const waiting = [];
    let source;
    try {
      source = new EventSource(`/api/live/${enc(v.channel)}${user ? `?user=${enc(user)}` : ""}`);
    } catch (_) {
      return;
    }
    v.source = source;
    source.onopen = () => {
      if (v !== view) return;
      v.liveOn = true;
      $("log").dataset.live = "on";
      showCount();
    };
    source.onmessage = (e) => {
      if (v !== view) return;
      let r;
      try {
        r = record(JSON.parse(e.data));
      } catch (_) {
        return;
      }
      if (!keep(r)) return;
      r.live = true;
      if (v.loading) waiting.push(r);
      else addRecords(v, [r], { live: true });
    };
    source.onerror = () => {
      if (v !== view) return;
      v.liveOn = source.readyState === EventSource.OPEN;
      $("log").dataset.live = source.readyState === EventSource.CLOSED ? "unavailable" : "reconnecting";
      showCount();
    };
    const flush = () => {
      if (v !== view) return;
      if (v.loading) {
        setTimeout(flush, 100);
        return;
      }
      if (waiting.length) addRecords(v, waiting.splice(0), { live: true });
    };
    setTimeout(flush, 100);
  }

  async function route() {
    const v = newView(new URLSearchParams(location.search));
    delete document.documentElement.dataset.notFound;
    chrome(v);
    try {
      if (!v.channel) {
        v.kind = "home";
        await showHome(v);
        return;
      }
      if (v.q) {
        chrome(Object.assign(v, { kind: "search" }));
        await searchView(v);
      } else if (v.user) {
        chrome(Object.assign(v, { kind: "user" }));
        await userView(v);
      } else {
        chrome(Object.assign(v, { kind: "day" }));
        await dayView(v);
      }
    } catch (err) {
      if (v.source && err.status === 404 && /is not logged/.test(err.message || "")) v.source.close();
      notFound(v, err);
    }
  }

  // -------------------------------------------------------------------------- what a person does
  function go(params, { replace = false } = {}) {
    const clean = Object.fromEntries(Object.entries(params).filter(([, value]) => value));
    const url = Object.keys(clean).length ? link(clean) : "/";
    history[replace ? "replaceState" : "pushState"](null, "", url);
    scrollTo(0, 0);
    route();
  }

  function download() {
    const lines = list.text();
    const text = lines.length ? `${lines.join("\n")}\n` : "";
    const blob = new Blob([text], { type: "text/plain;charset=utf-8" });
    const a = el("a");
    const name = view.kind === "day" ? `${view.channel}-${view.date}`
      : view.kind === "user" ? `${view.channel}-${view.user}-${view.month}`
        : `${view.channel}-search`;
    a.download = `${name.replace(/[^\w.-]+/g, "_")}.txt`;
    a.href = URL.createObjectURL(blob);
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  }

  function toggleTheme() {
    const root = document.documentElement;
    const current = root.dataset.theme || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
    const next = current === "dark" ? "light" : "dark";
    root.dataset.theme = next;
    try {
      localStorage.setItem("chatlog-theme", next);
    } catch (_) { /* not kept */ }
  }

  function step(which) {
    const node = $(which);
    if (!$("nav").hidden && node.getAttribute("href")) {
      history.pushState(null, "", node.getAttribute("href"));
      scrollTo(0, 0);
      route();
    }
  }

  document.addEventListener("click", (e) => {
    const a = e.target.closest && e.target.closest("a[href^='/?'], a[href='/']");
    if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    history.pushState(null, "", a.getAttribute("href"));
    scrollTo(0, 0);
    route();
  });

  document.addEventListener("keydown", (e) => {
    const target = e.target;
    const typing = target instanceof HTMLInputElement || target instanceof HTMLSelectElement || target instanceof HTMLTextAreaElement;
    if (typing) {
      if (e.key === "Escape") target.blur();
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const keys = {
      "/": () => { if (!$("searchform").hidden) $("q").focus(); else $("filter").focus(); },
      k: () => step("prev"),
      ArrowLeft: () => step("prev"),
      j: () => step("next"),
      ArrowRight: () => step("next"),
      g: () => scrollTo(0, 0),
      Home: () => scrollTo(0, 0),
      G: () => list.toBottom(),
      End: () => list.toBottom(),
      t: toggleTheme,
    };
    const action = keys[e.key];
    if (action) {
      e.preventDefault();
      action();
    }
  });

  $("channel").addEventListener("change", (e) => go({ channel: e.target.value }));
  $("date").addEventListener("change", (e) => {
    if (e.target.value) go({ channel: view.channel, date: e.target.value });
  });
  $("month").addEventListener("change", (e) => {
    if (e.target.value) go({ channel: view.channel, user: view.user, month: e.target.value });
  });
  $("searchform").addEventListener("submit", (e) => {
    e.preventDefault();
    const q = $("q").value.trim() ? $("q").value : "";
    const keepUser = view.kind === "user" || (view.kind === "search" && view.user) ? view.user : "";
    const keepDate = view.kind === "day" || (view.kind === "search" && !view.user) ? view.date : "";
    $("q").blur();
    go({ channel: view.channel, user: keepUser, date: keepDate, q });
  });
  $("userform").addEventListener("submit", (e) => {
    e.preventDefault();
    $("user").blur();
    go({ channel: view.channel, user: $("user").value.trim().replace(/^@/, "").toLowerCase() });
  });
  $("filter").addEventListener("input", filterChannels);
  $("download").addEventListener("click", download);
  $("theme").addEventListener("click", toggleTheme);
  $("latest").addEventListener("click", () => list.toBottom());
  addEventListener("popstate", route);
  for (const kind of ["wheel", "touchstart", "mousedown", "keydown"]) {
    addEventListener(kind, () => { view.touched = true; }, { passive: true, capture: true });
  }

  // An emote whose picture does not load (offline) becomes its text.
  document.addEventListener(
    "error",
    (e) => {
      const img = e.target;
      if (!(img instanceof HTMLImageElement) || !img.classList.contains("emote")) return;
      const text = el("span", `emote-text${img.classList.contains("hit") ? " hit" : ""}`, img.alt);
      text.title = img.title;
      text.dataset.emoteId = img.dataset.emoteId || "";
      img.replaceWith(text);
    },
    true,
  );

  route();
})();
