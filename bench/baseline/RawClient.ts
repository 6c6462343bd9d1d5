/**
 * The baseline: a minimal hand-written client of the same protocol, the code
 * a partner would write with plain `fetch` and nothing else. One token, a
 * POST, then GETs until the quote is complete. No validation, no retries, no
 * schema decoding, no events; deliberately plain async code.
 */
import { randomUUID } from "node:crypto"

/** Where the service is and who the partner is. */
export interface RawConfig {
  readonly baseUrl: string
  readonly authUrl: string
  readonly stage: string
  readonly clientId: string
  readonly clientSecret: string
  readonly apiKey: string
  /** The wait between GETs while the quote is not complete; 0 re-GETs at once. */
  readonly pollIntervalMillis: number
}

/** The card as the POST body carries it. */
export interface RawCard {
  readonly cardNumber: string
  readonly pinNumber: string
  readonly productLineId: string
}

/** The completed quote, as the service sends it. */
export interface RawQuote {
  readonly transactionId: string
  readonly isCompleted: boolean
  readonly expectedCompletionTime?: number
  readonly actualCardValue?: number
  readonly exchangeCardValue?: number
}

const sleep = (millis: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, millis)
    signal?.addEventListener("abort", () => {
      clearTimeout(timer)
      reject(new Error("aborted"))
    }, { once: true })
  })

/** The hand-written client. */
export class RawClient {
  private token: string | undefined
  private expiresAt = 0

  constructor(readonly config: RawConfig) {}

  /** Requests a token and caches it. */
  async fetchToken(): Promise<string> {
    const response = await fetch(`${this.config.authUrl}/oauth2/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "client_credentials",
        client_id: this.config.clientId,
        client_secret: this.config.clientSecret
      })
    })
    if (!response.ok) throw new Error(`token request failed: HTTP ${response.status}`)
    const body = (await response.json()) as { access_token: string; expires_in: number }
    this.token = body.access_token
    this.expiresAt = Date.now() + body.expires_in * 1000
    return body.access_token
  }

  /**
   * The cached token while it is valid, else a new one. The naive cache of
   * hand-written code: callers that find it empty at the same time each
   * request their own token.
   */
  getToken(): Promise<string> {
    return this.token !== undefined && Date.now() < this.expiresAt ? Promise.resolve(this.token) : this.fetchToken()
  }

  private headers(token: string): Record<string, string> {
    return {
      authorization: `Bearer ${token}`,
      "x-api-key": this.config.apiKey,
      requestId: randomUUID().replaceAll("-", ""),
      accept: "application/json"
    }
  }

  private get quoteUrl(): string {
    return `${this.config.baseUrl}/${this.config.stage}/v3/exchange/quote`
  }

  /** GET the heartbeat; returns the status. */
  async heartbeat(): Promise<number> {
    const response = await fetch(`${this.config.baseUrl}/exchange/v3/heartbeat`, {
      headers: this.headers(await this.getToken())
    })
    await response.arrayBuffer()
    if (!response.ok) throw new Error(`heartbeat failed: HTTP ${response.status}`)
    return response.status
  }

  /** POST the quote; returns the service's first answer. */
  async createQuote(card: RawCard): Promise<RawQuote> {
    const created = await fetch(this.quoteUrl, {
      method: "POST",
      headers: { ...this.headers(await this.getToken()), "content-type": "application/json" },
      body: JSON.stringify({ card })
    })
    if (created.status !== 201) throw new Error(`quote failed: HTTP ${created.status}`)
    return (await created.json()) as RawQuote
  }

  /** POST the quote, then GET it until it is complete. */
  async getQuote(card: RawCard): Promise<RawQuote> {
    return this.waitFor(await this.createQuote(card))
  }

  /** GET a created quote until it is complete, waiting the poll interval between GETs. */
  async waitFor(created: RawQuote, signal?: AbortSignal): Promise<RawQuote> {
    let quote = created
    while (!quote.isCompleted) {
      if (this.config.pollIntervalMillis > 0) await sleep(this.config.pollIntervalMillis, signal)
      const status = await fetch(`${this.quoteUrl}/${quote.transactionId}`, {
        headers: this.headers(await this.getToken()),
        ...(signal === undefined ? {} : { signal })
      })
      if (!status.ok) throw new Error(`status failed: HTTP ${status.status}`)
      quote = ((await status.json()) as { response: RawQuote }).response
    }
    return quote
  }
}
