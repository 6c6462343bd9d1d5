// The checkout page: submits the card to this site's backend (which holds the gateway key), then follows the
// quote's progress with EventSource and shows its outcome. The card leaves the page with the submission: the form is
// cleared at once and nothing of it is kept.

const form = /** @type {HTMLFormElement} */ (document.getElementById("card-form"))
const button = /** @type {HTMLButtonElement} */ (form.querySelector("button"))
const section = /** @type {HTMLElement} */ (document.getElementById("progress-section"))
const bar = /** @type {HTMLProgressElement} */ (document.getElementById("progress"))
const progressText = /** @type {HTMLElement} */ (document.getElementById("progress-text"))
const status = /** @type {HTMLElement} */ (document.getElementById("status"))

/** What to tell the shopper for each error code of the gateway (docs/gateway.md). */
const messages = {
  invalid_request: "Please check the card number, the PIN and the merchant.",
  payload_too_large: "Please check the card number, the PIN and the merchant.",
  rate_limited: "Too many attempts just now: please wait a moment and try again.",
  unauthorized: "The shop cannot reach the exchange right now (its key was refused).",
  not_found: "This quote is no longer known.",
  unavailable: "The exchange cannot be reached right now. Please try again later.",
  internal: "Something went wrong on our side. Please try again later."
}

/** Shows `text` in the live status region (read out by screen readers), styled as `kind`. */
const announce = (text, kind = "") => {
  status.className = kind
  status.replaceChildren(document.createTextNode(text))
}

const progressLabel = /** @type {HTMLElement} */ (document.getElementById("progress-label"))

/**
 * The bar between the service's reports: gcx polls when the service said the check would be done
 * (`expectedCompletionTime`, seconds), so the bar advances on that estimate, up to 95 %, until a
 * Progress event gives the real figure. It never goes back.
 */
let estimate
const advance = (percent, seconds) => {
  clearInterval(estimate)
  bar.value = Math.max(bar.value, percent)
  if (!(seconds > 0) || percent >= 100) return
  const from = bar.value
  const start = performance.now()
  estimate = setInterval(() => {
    const share = Math.min(1, (performance.now() - start) / (seconds * 1000))
    bar.value = Math.max(bar.value, Math.round(from + (95 - from) * share))
    if (share === 1) clearInterval(estimate)
  }, 200)
}

/** The check is over: the form is ready for another card; the bar stays where the quote ended. */
const finish = () => {
  clearInterval(estimate)
  button.disabled = false
  button.textContent = "Check another card"
  progressLabel.textContent = "Check finished"
}

/** An error answer of the backend: `{ error: { code, message } }`. */
const refused = async (answer) => {
  const body = await answer.json().catch(() => ({}))
  const code = body?.error?.code ?? "unavailable"
  announce(`${messages[code] ?? messages.internal} (${code})`, "failed")
  finish()
}

/** The outcome of a finished quote, from its resource. */
const showOutcome = async (quote) => {
  const answer = await fetch(quote.links.self)
  if (!answer.ok) return refused(answer)
  const view = await answer.json()
  if (view.status === "completed") {
    bar.value = 100
    const list = document.createElement("dl")
    const rows = [["Balance", view.outcome.actualCardValue], ["We offer", view.outcome.exchangeCardValue]]
    for (const [term, value] of rows) {
      list.append(Object.assign(document.createElement("dt"), { textContent: term }))
      list.append(Object.assign(document.createElement("dd"), { textContent: value }))
    }
    announce("The card was checked.", "completed")
    status.append(list)
  } else {
    announce(view.error?.userMessage ?? "The card could not be exchanged.", "failed")
  }
  finish()
}

/** Follows the quote's events: the bar moves with each Progress; the terminal event ends the stream. */
const follow = (quote) => {
  const source = new EventSource(quote.links.events)
  source.addEventListener("Submitted", (event) => {
    const data = JSON.parse(event.data)
    advance(data.percentComplete ?? 0, data.expectedCompletionTime)
    if (data.expectedCompletionTime > 0) progressText.textContent = `About ${data.expectedCompletionTime} s`
  })
  source.addEventListener("Progress", (event) => {
    const data = JSON.parse(event.data)
    advance(data.percentComplete, data.expectedCompletionTime)
    const done = data.steps.filter((step) => step.isCompleted).length
    progressText.textContent = `${data.percentComplete} % · ${done} of ${data.steps.length} steps done`
  })
  source.addEventListener("Retrying", () => {
    progressText.textContent = "The merchant is slow to answer: still trying…"
  })
  for (const terminal of ["Completed", "Failed"]) {
    source.addEventListener(terminal, () => {
      // the stream ends after it: close, or EventSource would connect again
      source.close()
      showOutcome(quote)
    })
  }
  source.addEventListener("error", () => {
    // EventSource reconnects by itself (sending Last-Event-ID) unless the answer was an error
    if (source.readyState === EventSource.CLOSED) {
      announce(messages.unavailable, "failed")
      finish()
    }
  })
}

form.addEventListener("submit", async (event) => {
  event.preventDefault()
  if (!form.checkValidity()) return form.reportValidity()
  const body = JSON.stringify(Object.fromEntries(new FormData(form)))
  form.reset()
  button.disabled = true
  button.textContent = "Checking…"
  bar.value = 0
  progressText.textContent = ""
  section.hidden = false
  progressLabel.textContent = "Checking the card with the merchant…"
  announce("Card submitted: checking it now.")
  const answer = await fetch("/api/quotes", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body
  }).catch(() => undefined)
  if (answer === undefined) {
    announce(messages.unavailable, "failed")
    return finish()
  }
  if (answer.status !== 202) return refused(answer)
  follow(await answer.json())
})
