import type { ServerResponse } from "node:http";
import type { Chunk } from "./format.ts";

/** Bytes a client may leave unread in its socket before its stream is cut (it is gone or far too slow). */
const MAX_BACKLOG = 256 * 1024;

/** A live event that arrived while the stream was still being opened. */
interface Held {
  id: string;
  chunk: Chunk;
  terminal: boolean;
}

/**
 * One open event stream, with only the state the fan-out needs: the hub holds thousands of
 * these, so it has no timers or closures of its own.
 */
export class SseStream {
  /** The newest event id the client has been told about; event ids sort in creation order. */
  lastId = "";
  /** Live events held while the stream is opened (replay first); null once it is live. */
  held: Held[] | null = [];
  /** The hub's heartbeat slot; -1 until live. */
  slot = -1;
  closed = false;

  constructor(
    readonly res: ServerResponse,
    readonly tenantId: string,
    readonly verificationId: string,
    readonly connId: string,
  ) {}

  /** Sends the headers of an unbuffered event stream together with the first text. */
  start(first: string): void {
    this.res.writeHead(200, {
      "Content-Type": "text/event-stream",
      "Cache-Control": "no-cache",
      Connection: "keep-alive",
      // nginx and friends: pass each chunk on at once
      "X-Accel-Buffering": "no",
    });
    // small writes go out at once instead of waiting for the previous one's ACK
    this.res.socket?.setNoDelay(true);
    this.res.write(first);
  }

  /**
   * Writes a shared chunk; a client that stopped reading is cut off. Once the headers are out, a
   * chunked response's bytes are exactly the framed chunk, so it goes to the socket as is: the
   * same bytes res.write would send, without framing them again for each of thousands of
   * streams (that halves the fan-out time). res.end() still closes the chunked body properly.
   */
  send(c: Chunk): void {
    const socket = this.res.socket;
    if (socket && socket.writableLength > MAX_BACKLOG) {
      this.res.destroy();
      return;
    }
    // the shortcut only while the response holds nothing unsent of its own (order is kept)
    if (socket && this.res.chunkedEncoding && this.res.writableLength === 0) socket.write(c.framed);
    else this.res.write(c.text);
  }

  /**
   * A live event: held while the stream opens, then written unless the client already has it
   * (an id not after lastId: replayed, or delivered twice). Answers true when the stream must
   * end after it.
   */
  deliver(id: string, c: Chunk, terminal: boolean): boolean {
    if (this.held) {
      this.held.push({ id, chunk: c, terminal });
      return false;
    }
    if (id <= this.lastId) return false;
    this.lastId = id;
    this.send(c);
    return terminal;
  }
}
