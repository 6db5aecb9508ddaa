#!/usr/bin/env node
// Drive a GTP engine the way Sabaki does, through Sabaki's own GTP client library, and write a JSON summary.
//
//   node drive.js --out summary.json [--moves 20] [--size 9] [--komi 7] [--interval 10] [--timeout 60]
//                 -- ENGINE [ARG ...]
//
// The client is @sabaki/gtp (Controller: spawns the engine, pipes commands, splits responses on the blank line;
// ControllerStateTracker: Sabaki's board sync, i.e. komi / boardsize / clear_board / play / undo), the board is
// @sabaki/go-board (Sabaki's rules: captures, suicide, ko). What it does, in the order Sabaki does it:
//
//   1. start: `name`, `version`, `protocol_version`, `list_commands` sent at once (pipelined), as Sabaki's
//      EngineSyncer does when an engine starts; the time from spawn to the `name` answer is recorded;
//   2. sync {komi, boardsize, history: []} through the state tracker (komi, boardsize, clear_board);
//   3. a game of --moves plies: the client plays Black (`play B V`, a legal point from a fixed pseudo-random
//      order that is not one of its own eyes), the engine answers White with `genmove W`, or with
//      `lz-genmove_analyze W I` / `kata-genmove_analyze W I` (one each, where the engine lists them), every move
//      checked against Sabaki's board; `showboard` read back and compared point by point with that board;
//   4. twice, streamed analysis of the side to move, `lz-analyze C I` and `kata-analyze C I`, through the
//      subscriber API (one call per response line), stopped after 3 blocks by `protocol_version`, as Sabaki's
//      sendAbort stops it; each `info` line parsed with Sabaki's rules for its analysis lines (split on `info`,
//      key/value pairs, a trailing run of vertices as the PV, a winrate without a decimal point in lz units of
//      0.01%, with one in [0, 1]) and then checked: every candidate a legal empty point for that colour, the PV
//      starting with it, winrate within 0-100%, visits a non-negative integer, no candidate dropped by the rules;
//   5. Sabaki's "go back two moves": sync to the history less its last two moves, which the tracker does with
//      two `undo`s, then `showboard` checked again; `final_score` (B+x, W+x or 0); `quit` and the exit status.
//
// Every line the engine writes to stdout is counted: a line @sabaki/gtp does not deliver to any command (a stray
// line, or a first line that starts with neither `=` nor `?`, which the library silently skips) is an error, and
// so is any response whose first line is not `=[id][ text]` / `?[id][ text]` (both `=` and `= ` are accepted for
// an empty response). Each command has --timeout seconds (the first: twice that, the engine loads its net), so a
// silent or malformed engine ends the run with an error instead of hanging. The summary is written in all cases;
// the exit status is 0 when `errors` is empty, 1 otherwise, 2 on bad arguments.

'use strict'

const fs = require('fs')
const {Controller, ControllerStateTracker} = require('@sabaki/gtp')
const Board = require('@sabaki/go-board')

// --- arguments ----------------------------------------------------------------------------------------------
function parseArgs(argv) {
  const opts = {out: null, moves: 20, size: 9, komi: 7, interval: 10, timeout: 60, engine: []}
  const dash = argv.indexOf('--')
  if (dash < 0 || dash === argv.length - 1) throw new Error('no engine: give it after --')
  opts.engine = argv.slice(dash + 1)
  const own = argv.slice(0, dash)
  for (let i = 0; i < own.length; i += 2) {
    const key = own[i].replace(/^--/, '')
    if (!(key in opts) || key === 'engine' || own[i + 1] == null) throw new Error(`bad option ${own[i]}`)
    opts[key] = key === 'out' ? own[i + 1] : Number(own[i + 1])
    if (key !== 'out' && !Number.isFinite(opts[key])) throw new Error(`${own[i]} needs a number`)
  }
  if (!opts.out) throw new Error('--out FILE is required')
  return opts
}

// --- what went wrong ----------------------------------------------------------------------------------------
class Failure extends Error {}

function withTimeout(promise, seconds, what) {
  let timer
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Failure(`no complete response to ${what} within ${seconds} s`)), seconds * 1000)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

// --- Sabaki's reading of an analysis line, then the checks ------------------------------------------------
const VERTEX = /^[A-HJ-Za-hj-z]\d+$/

// One `info ...` line -> candidates, read as Sabaki reads them: the line split on the word `info`, each piece's
// trailing run of vertices (or `pass`) is its PV (cut at the first pass), the tokens before it KEY VALUE pairs
// with the `pv` key itself dropped; a candidate whose move is not a vertex is dropped (Sabaki ignores `pass`).
function sabakiReadAnalysis(line) {
  const pieces = line.split(/\s*info\s+/).slice(1).map(x => x.trim())
  const candidates = []
  for (const piece of pieces) {
    const pvMatch = piece.match(/(pass|[A-Za-z]\d+)(\s+(pass|[A-Za-z]\d+))*$/)
    if (pvMatch == null) continue
    const tokens = piece.slice(0, pvMatch.index).trim().split(/\s+/).slice(0, -1) // drop the `pv` key
    const fields = {}
    for (let i = 0; i + 1 < tokens.length; i += 2) fields[tokens[i]] = tokens[i + 1]
    const cut = pvMatch[0].indexOf('pass')
    fields.pv = (cut < 0 ? pvMatch[0] : pvMatch[0].slice(0, cut)).split(/\s+/).filter(x => x.length >= 2)
    if (typeof fields.move !== 'string' || !VERTEX.test(fields.move)) continue
    const winrate = fields.winrate == null ? NaN
      : fields.winrate.includes('.') ? +fields.winrate * 100 : +fields.winrate / 100
    candidates.push({move: fields.move.toUpperCase(), visits: +fields.visits, winrate,
                     prior: fields.prior, pv: fields.pv.map(v => v.toUpperCase())})
  }
  return {pieces: pieces.length, candidates}
}

// --- the driver -----------------------------------------------------------------------------------------------
class Driver {
  constructor(opts) {
    this.opts = opts
    this.summary = {
      client: clientVersions(), engine: opts.engine, size: opts.size, komi: opts.komi,
      startup_ms: null, name: null, version: null, protocol_version: null, commands: [],
      commands_sent: 0, responses: 0, stdout_lines: 0, delivered_lines: 0, stray_lines: [], first_lines: [],
      moves: [], showboards: [], analyses: [], undo_checked: false, final_score: null,
      exit_code: null, stderr_tail: [], errors: []
    }
    this.board = Board.fromDimensions(opts.size)
    this.history = [] // [{name: 'play', args: [colour, vertex]}]
    this.rng = 12345
  }

  error(msg) {
    this.summary.errors.push(msg)
  }

  // The engine, spawned by @sabaki/gtp's Controller; every stdout line counted, every response checked.
  start() {
    const [path, ...args] = this.opts.engine
    this.controller = new Controller(path, args, {env: process.env})
    this.tracker = new ControllerStateTracker(this.controller)
    this.controller.on('stderr', ({content}) => {
      this.summary.stderr_tail.push(content)
      if (this.summary.stderr_tail.length > 30) this.summary.stderr_tail.shift()
    })
    this.controller.on('command-sent', ({command, subscribe, getResponse}) => {
      let first = true
      subscribe(({line}) => {
        this.summary.delivered_lines++
        this.deliveredLines.push(line)
        if (first) {
          first = false
          this.summary.first_lines.push(line)
          if (!/^[=?]\d*( .*)?$/.test(line)) this.error(`malformed first response line to ${cmdText(command)}: ${JSON.stringify(line)}`)
        }
      })
      this.summary.commands_sent++
      getResponse().then(r => {
        this.summary.responses++
        if (command.name === 'quit' && r.error) this.error(`quit answered an error: ? ${r.content}`)
      }, () => {})
    })
    this.spawnedAt = Date.now()
    this.controller.start()
    const proc = this.controller.process
    this.rawLines = []
    this.deliveredLines = []
    this.exited = new Promise(resolve => proc.once('exit', (code, signal) => resolve({code, signal})))
    proc.on('error', err => this.error(`cannot start the engine: ${err.message}`))
    let buffer = ''
    proc.stdout.on('data', data => {
      buffer += data.toString().replace(/\r/g, '')
      const cut = buffer.lastIndexOf('\n')
      if (cut < 0) return
      for (const line of buffer.slice(0, cut).split('\n')) {
        this.summary.stdout_lines++
        this.rawLines.push(line)
      }
      buffer = buffer.slice(cut + 1)
    })
  }

  // One command through the tracker's queue (as Sabaki sends its own commands) or straight to the controller;
  // an error response (`?`) fails the run.
  async send(command, {subscriber, timeout, viaTracker = true} = {}) {
    const secs = timeout || this.opts.timeout
    const p = viaTracker ? this.tracker.queueCommand(command, subscriber)
      : this.controller.sendCommand(command, subscriber)
    const response = await withTimeout(p, secs, cmdText(command))
    if (response.error) throw new Failure(`${cmdText(command)} answered an error: ? ${response.content}`)
    return response
  }

  async handshake() {
    // Sabaki's EngineSyncer, on 'started': four commands at once, no waiting in between.
    const t = this.opts.timeout * 2
    const [name, version, protocol, list] = await Promise.all([
      this.send({name: 'name'}, {timeout: t, viaTracker: false}).then(r => {
        this.summary.startup_ms = Date.now() - this.spawnedAt
        return r
      }),
      this.send({name: 'version'}, {timeout: t, viaTracker: false}),
      this.send({name: 'protocol_version'}, {timeout: t, viaTracker: false}),
      this.send({name: 'list_commands'}, {timeout: t, viaTracker: false})
    ])
    Object.assign(this.summary, {name: name.content, version: version.content, protocol_version: protocol.content,
                                 commands: list.content.split('\n').map(x => x.trim()).filter(Boolean)})
    if (protocol.content !== '2') this.error(`protocol_version is ${JSON.stringify(protocol.content)}, not 2`)
    for (const c of ['boardsize', 'clear_board', 'komi', 'play', 'genmove', 'undo', 'showboard', 'final_score',
                     'lz-analyze', 'kata-analyze']) {
      if (!(await this.tracker.knowsCommand(c))) this.error(`list_commands lacks ${c}`)
    }
  }

  async sync(history) {
    const {size, komi} = this.opts
    await withTimeout(this.tracker.sync({komi, boardsize: [size, size], history}), this.opts.timeout,
                      `the state tracker's sync to ${history.length} moves`)
    const st = this.tracker.state
    if (st.komi !== komi || st.boardsize[0] !== size || st.history.length !== history.length) {
      throw new Failure(`after sync the engine state is ${JSON.stringify(st)}`)
    }
  }

  // Sabaki's board: a move the engine plays or accepts must be legal there too.
  apply(colour, vertexText, who) {
    const sign = colour === 'B' ? 1 : -1
    if (vertexText === 'PASS') return
    const v = this.board.parseVertex(vertexText)
    if (!VERTEX.test(vertexText) || !this.board.has(v)) throw new Failure(`${who} move ${JSON.stringify(vertexText)} is not a vertex on ${this.opts.size}x${this.opts.size}`)
    try {
      this.board = this.board.makeMove(sign, v, {preventOverwrite: true, preventSuicide: true, preventKo: true})
    } catch (e) {
      throw new Failure(`${who} move ${colour} ${vertexText} is illegal on Sabaki's board (${e.message})`)
    }
  }

  legalFor(sign, v) {
    const a = this.board.analyzeMove(sign, v)
    return !a.pass && !a.overwrite && !a.suicide && !a.ko
  }

  // The client's own move: the first legal point, in a fixed pseudo-random order, that is not its own eye.
  clientMove(sign) {
    const n = this.opts.size
    const points = []
    for (let y = 0; y < n; y++) for (let x = 0; x < n; x++) points.push([x, y])
    for (let i = points.length - 1; i > 0; i--) {
      this.rng = (this.rng * 1103515245 + 12345) % 2147483648
      const j = this.rng % (i + 1);
      [points[i], points[j]] = [points[j], points[i]]
    }
    for (const v of points) {
      const eye = this.board.getNeighbors(v).every(nb => this.board.get(nb) === sign)
      if (this.legalFor(sign, v) && !eye) return this.board.stringifyVertex(v)
    }
    return 'pass'
  }

  async play(colour, vertexText) {
    await this.send({name: 'play', args: [colour, vertexText]})
    this.apply(colour, vertexText.toUpperCase(), 'the client\'s')
    this.history.push({name: 'play', args: [colour, vertexText.toUpperCase()]})
    this.summary.moves.push({colour, move: vertexText.toUpperCase(), by: 'play'})
  }

  async engineMove(colour, how) {
    let move
    let blocks = 0
    if (how === 'genmove') {
      move = (await this.send({name: 'genmove', args: [colour]})).content
    } else {
      // Sabaki's genmove_analyze: the `play` line is the move; the `info` lines before it are analysis.
      let played = null
      const subscriber = ({line}) => {
        if (line.startsWith('info ')) {
          blocks++
          this.checkAnalysisLine(line, colour === 'B' ? 1 : -1, how)
        }
        const m = line.trim().match(/^play\s+(.*)$/)
        if (m) played = m[1]
      }
      const response = await this.send({name: how, args: [colour, String(this.opts.interval)]}, {subscriber})
      const other = response.content.split('\n').filter(l => !l.startsWith('info ') && !/^play\s/.test(l))
      if (other.length) this.error(`${how}: a response line that is neither info nor play: ${JSON.stringify(other[0])}`)
      if (played == null) throw new Failure(`${how} ${colour}: no "play" line in the response`)
      move = played
      this.summary.analyses.push({command: how, colour, blocks, stopped_by: null})
    }
    move = move.trim().toUpperCase()
    this.summary.moves.push({colour, move, by: how})
    if (move === 'RESIGN') return false
    if (!/^(PASS|[A-HJ-Z]\d+)$/.test(move)) throw new Failure(`${how} ${colour} answered ${JSON.stringify(move)}, not a vertex, pass or resign`)
    this.apply(colour, move, `the engine's ${how}`)
    this.history.push({name: 'play', args: [colour, move]})
    // The tracker records the engine's move itself (genmove and genmove_analyze): it must agree with ours.
    const tracked = this.tracker.state.history
    await new Promise(resolve => setImmediate(resolve))
    if (tracked.length !== this.history.length) this.error(`state tracker history has ${tracked.length} moves after ${how}, the game ${this.history.length}`)
    return true
  }

  checkAnalysisLine(line, sign, command) {
    const {pieces, candidates} = sabakiReadAnalysis(line)
    const where = `${command} block ${JSON.stringify(line.slice(0, 120))}`
    if (pieces === 0) this.error(`${where}: no "info" in the line`)
    const passes = (line.match(/\binfo\s+move\s+pass\b/gi) || []).length
    if (candidates.length + passes !== pieces) this.error(`${where}: Sabaki's rules kept ${candidates.length} of ${pieces} candidates`)
    for (const c of candidates) {
      const v = this.board.parseVertex(c.move)
      if (!this.board.has(v) || !this.legalFor(sign, v)) this.error(`${where}: candidate ${c.move} is not a legal point for ${sign > 0 ? 'B' : 'W'}`)
      if (c.pv.length === 0 || c.pv[0] !== c.move) this.error(`${where}: PV ${c.pv.join(' ')} does not start with ${c.move}`)
      if (!(c.winrate >= 0 && c.winrate <= 100)) this.error(`${where}: winrate of ${c.move} reads ${c.winrate}%`)
      if (!(Number.isInteger(c.visits) && c.visits >= 0)) this.error(`${where}: visits of ${c.move} is not a count`)
    }
    return candidates
  }

  // Streamed analysis as Sabaki runs it: the subscriber sees each line; the next command stops it.
  async analyse(commandName, colour, wanted = 3) {
    const sign = colour === 'B' ? 1 : -1
    const record = {command: commandName, colour, blocks: 0, candidates: [], moves: [], winrates: [],
                    first_block_ms: null, block_gaps_ms: [], stopped_by: 'protocol_version'}
    const t0 = Date.now()
    let last = null
    let stop
    const enough = new Promise(resolve => { stop = resolve })
    const subscriber = ({line}) => {
      if (!line.startsWith('info ')) return
      const now = Date.now()
      if (last == null) record.first_block_ms = now - t0
      else record.block_gaps_ms.push(now - last)
      last = now
      record.blocks++
      const cands = this.checkAnalysisLine(line, sign, commandName)
      record.candidates.push(cands.length)
      for (const c of cands) {
        if (!record.moves.includes(c.move)) record.moves.push(c.move)
        record.winrates.push(c.winrate)
      }
      if (record.blocks >= wanted) stop()
    }
    const analysis = this.send({name: commandName, args: [colour, String(this.opts.interval)]}, {subscriber})
    analysis.then(() => stop(), () => stop())
    await withTimeout(enough, this.opts.timeout, `${commandName} (waiting for ${wanted} blocks)`)
    if (record.blocks < wanted) {
      const r = await analysis
      throw new Failure(`${commandName} ${colour} ended by itself after ${record.blocks} block(s)` +
                        (r.error ? `: ? ${r.content}` : ''))
    }
    // Sabaki's sendAbort: the controller is busy with the analysis, so `protocol_version` goes straight to it.
    const abort = this.send({name: 'protocol_version'}, {viaTracker: false})
    abort.catch(() => {}) // awaited below; this only keeps a rejection after an earlier failure from going unhandled
    const response = await analysis
    const other = response.content.split('\n').filter(l => l !== '' && !l.startsWith('info '))
    if (response.error || other.length) this.error(`${commandName}: a response line that is not an info line: ${JSON.stringify(response.error ? `? ${response.content}` : other[0])}`)
    const stopped = await abort
    if (stopped.content !== '2') this.error(`the protocol_version that stopped ${commandName} answered ${JSON.stringify(stopped.content)}`)
    record.winrates = [Math.min(...record.winrates), Math.max(...record.winrates)]
    this.summary.analyses.push(record)
  }

  // `showboard` read back: rows "N p p p ... N", p one of . + X O (GNU Go's and kifunet's layout).
  async checkShowboard(label) {
    const n = this.opts.size
    const text = (await this.send({name: 'showboard'})).content
    const rows = {}
    for (const line of text.split('\n')) {
      const m = line.match(/^\s*(\d+)\s+((?:[.+XxOo]\s+){1,25})(\d+)\b/)
      if (m && m[1] === m[3]) rows[+m[1]] = m[2].trim().split(/\s+/)
    }
    const diffs = []
    for (let y = 0; y < n; y++) {
      const row = rows[n - y]
      if (row == null || row.length !== n) { diffs.push(`row ${n - y} missing`); continue }
      for (let x = 0; x < n; x++) {
        const want = {1: 'X', '-1': 'O', 0: '.'}[this.board.get([x, y])]
        const got = row[x].toUpperCase() === '+' ? '.' : row[x].toUpperCase()
        if (got !== want) diffs.push(`${this.board.stringifyVertex([x, y])} ${got}, Sabaki ${want}`)
      }
    }
    this.summary.showboards.push({label, matches: diffs.length === 0, text})
    if (diffs.length) this.error(`showboard (${label}) differs from Sabaki's board: ${diffs.slice(0, 6).join('; ')}`)
  }

  async game() {
    const {moves} = this.opts
    await this.sync([])
    const knows = async c => this.tracker.knowsCommand(c)
    const genmoveAnalyze = {5: 'lz-genmove_analyze', 9: 'kata-genmove_analyze'}
    for (let ply = 0; ply < moves; ply++) {
      const colour = ply % 2 === 0 ? 'B' : 'W'
      if (ply === 6) await this.analyse('lz-analyze', colour)
      if (ply === 13) await this.analyse('kata-analyze', colour)
      if (colour === 'B') {
        await this.play('B', this.clientMove(1))
      } else {
        const how = genmoveAnalyze[ply] && (await knows(genmoveAnalyze[ply])) ? genmoveAnalyze[ply] : 'genmove'
        if (!(await this.engineMove('W', how))) break // resigned
      }
      if (ply === 9) await this.checkShowboard(`after ${ply + 1} moves`)
    }
    await this.checkShowboard(`after ${this.history.length} moves`)
    // Sabaki going back two moves in its game tree: the tracker syncs with two `undo`s.
    if (this.history.length >= 2) {
      const sent = []
      const listener = ({command}) => sent.push(command.name)
      this.controller.on('command-sent', listener)
      this.history = this.history.slice(0, -2)
      await this.sync(this.history)
      this.controller.removeListener('command-sent', listener)
      this.board = Board.fromDimensions(this.opts.size)
      for (const {args: [c, v]} of this.history) this.apply(c, v, 'a replayed')
      if (sent.join(' ') !== 'undo undo') this.error(`going back two moves sent ${JSON.stringify(sent)}, not two undos`)
      await this.checkShowboard('after two undos')
      this.summary.undo_checked = true
    }
    const score = (await this.send({name: 'final_score'})).content
    this.summary.final_score = score
    if (!/^([BW]\+\d+(\.\d+)?|0)$/.test(score)) this.error(`final_score ${JSON.stringify(score)} is not B+x, W+x or 0`)
  }

  async stop() {
    const timeout = this.opts.timeout * 1000
    await this.controller.stop(timeout)
    const {code, signal} = await withTimeout(this.exited, this.opts.timeout, 'quit (the process exit)')
    this.summary.exit_code = code
    if (code !== 0) this.error(`the engine exited with ${code === null ? `signal ${signal}` : `status ${code}`} after quit`)
  }

  finish() {
    const s = this.summary
    const delivered = s.delivered_lines
    if (s.stdout_lines !== delivered) {
      // Lines @sabaki/gtp never handed to a command (stray output, or a first line it skipped because it starts
      // with neither = nor ?): the raw lines less the delivered ones, which are the raw ones in order.
      let j = 0
      for (const line of this.rawLines) {
        if (j < this.deliveredLines.length && line === this.deliveredLines[j]) j++
        else s.stray_lines.push(line)
      }
      this.error(`${s.stdout_lines - delivered} stdout line(s) were not part of any response: ` +
                 JSON.stringify(s.stray_lines.slice(0, 5)))
    }
    s.ok = s.errors.length === 0
  }
}

function cmdText({name, args = []}) {
  return [name, ...args].join(' ')
}

function clientVersions() {
  const version = pkg => JSON.parse(fs.readFileSync(require.resolve(`${pkg}/package.json`), 'utf8')).version
  return {node: process.version, '@sabaki/gtp': version('@sabaki/gtp'), '@sabaki/go-board': version('@sabaki/go-board')}
}

async function main() {
  let opts
  try {
    opts = parseArgs(process.argv.slice(2))
  } catch (e) {
    process.stderr.write(`drive.js: ${e.message}\n`)
    return 2
  }
  const driver = new Driver(opts)
  process.on('unhandledRejection', e => driver.error(`unhandled: ${e && e.message}`))
  const t0 = Date.now()
  try {
    driver.start()
    await driver.handshake()
    await driver.game()
    await driver.stop()
  } catch (e) {
    driver.error(e instanceof Failure ? e.message : `${e.name}: ${e.message}`)
    if (driver.controller && driver.controller.process) driver.controller.process.kill('SIGKILL')
  }
  await new Promise(resolve => setTimeout(resolve, 50)) // the last stdout chunks
  driver.finish()
  driver.summary.wall_ms = Date.now() - t0
  fs.writeFileSync(opts.out, JSON.stringify(driver.summary, null, 1))
  for (const e of driver.summary.errors) process.stderr.write(`drive.js: ${e}\n`)
  return driver.summary.ok ? 0 : 1
}

main().then(code => process.exit(code), e => {
  process.stderr.write(`drive.js: ${e.stack}\n`)
  process.exit(1)
})
