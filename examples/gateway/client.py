#!/usr/bin/env python3
"""A client of `gcx serve` in Python 3, standard library only.

    GCX_GATEWAY_KEY=gcx_sk_... python3 client.py --card 6006000000000001 --pin 1234

submits a quote, follows its events to the end (printing a progress line per
event), prints the outcome (with --wait SECONDS, the POST waits for it, and the
events are followed only when it did not come in time), and, with --webhook-port (and GCX_WEBHOOK_SECRET),
receives the quote's webhook, verifies its signature and prints it (only its
own event, `evt_<quote id>`, once: another quote's, or a repeat, is answered
2xx and ignored). Exits 0 when the quote completed; 3 for a card failure, 4 a
merchant one, 5 another (or no answer); 2 when the gateway refused the call.
See docs/gateway.md for the protocol.
"""

import argparse
import hashlib
import hmac
import http.client
import http.server
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid

TERMINAL = ("Completed", "Failed")
# the exit code of a failed quote, by its error's group, as the gcx CLI's: card 3, merchant 4, else 5
EXIT_CODES = {"card": 3, "merchant": 4}
# the refusals that pass: tried again, with the same Idempotency-Key (docs/gateway.md, Errors)
PASSING = (429, 500, 502, 503, 504)


class GatewayError(Exception):
    """An error answer of the gateway: its HTTP status and its `error.code`."""

    def __init__(self, status, code, message, retry_after=None):
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.retry_after = status, code, retry_after


class Gateway:
    """The gateway at `base_url`, called with the API key `key`."""

    def __init__(self, base_url, key, timeout=40):
        self.base_url, self.key, self.timeout = base_url.rstrip("/"), key, timeout

    def _request(self, method, path, body=None, headers=None):
        request = urllib.request.Request(
            self.base_url + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.key}", "Accept": "application/json",
                     **({"Content-Type": "application/json"} if body is not None else {}), **(headers or {})},
        )
        try:
            return urllib.request.urlopen(request, timeout=self.timeout)
        except urllib.error.HTTPError as error:
            raise _gateway_error(error) from None

    def _json(self, method, path, body=None, headers=None, attempts=3):
        """A JSON call; a refusal that passes (429, 5xx) or a dropped connection is tried again, as it was."""
        for attempt in range(1, attempts + 1):
            try:
                with self._request(method, path, body, headers) as response:
                    return json.load(response)
            except (GatewayError, OSError, http.client.HTTPException) as error:
                passing = not isinstance(error, GatewayError) or error.status in PASSING
                if attempt == attempts or not passing:
                    raise
                time.sleep(getattr(error, "retry_after", None) or attempt)

    def submit(self, card, idempotency_key, wait=None):
        """POST /v1/quotes: `card` is {cardNumber, pinNumber, productLineId}; gives {id, status, links}.

        A retry sends the same Idempotency-Key: the gateway answers with the same quote, never a second one.
        With `wait` (seconds, at most 30), the answer waits for the quote's outcome (`Prefer: wait`): a quote
        that ended in time comes whole, as `get` gives it (`status` completed or failed); else as without.
        """
        headers = {"Idempotency-Key": idempotency_key}
        if wait is not None:
            headers["Prefer"] = f"wait={wait}"
        return self._json("POST", "/v1/quotes", card, headers)

    def get(self, quote_id):
        """GET /v1/quotes/{id}: the quote's status, percentage, steps and outcome."""
        return self._json("GET", f"/v1/quotes/{quote_id}")

    def events(self, quote_id, last_event_id=None, give_up_after=120):
        """Yields the quote's events as (id, event, data) until the terminal one.

        A dropped connection is resumed with `Last-Event-ID`: the gateway
        sends the events after it, so none is missed or repeated. The waits
        between attempts grow from 0.5 s (or the stream's `retry:`) to 5 s, so
        a gateway that restarts (a deploy) is waited for; gives up when it has
        not got a stream back for `give_up_after` seconds.
        """
        failures, base, since = 0, 0.5, 0.0
        while True:
            headers = {"Accept": "text/event-stream"}
            if last_event_id is not None:
                headers["Last-Event-ID"] = str(last_event_id)
            try:
                with self._request("GET", f"/v1/quotes/{quote_id}/events", headers=headers) as response:
                    for event_id, event, data, retry in _server_sent_events(response):
                        if retry is not None:
                            base = retry / 1000
                        if event_id is None:
                            continue
                        last_event_id, failures = event_id, 0
                        yield event_id, event, data
                        if event in TERMINAL:
                            return
            except (OSError, http.client.HTTPException) as error:  # a dropped or refused connection
                reason = error
            except GatewayError as error:
                if error.status not in PASSING:
                    raise
                reason = error
            else:
                reason = "the stream ended before the terminal event"
            if failures == 0:  # the first drop in a row: the wait starts now, however long the stream was quiet
                since = time.monotonic()
            failures += 1
            if time.monotonic() - since > give_up_after:
                raise ConnectionError(
                    f"the event stream of {quote_id} dropped {failures} times in {give_up_after} s: {reason}")
            where = "from the start" if last_event_id is None else f"after event {last_event_id}"
            print(f"stream dropped ({reason}); resuming {where}", file=sys.stderr)
            time.sleep(getattr(reason, "retry_after", None) or min(5.0, base * 2 ** (failures - 1)))


def _gateway_error(error):
    """A GatewayError from an HTTP error answer: `{"error": {"code", "message"}}`, or the bare status."""
    retry_after = error.headers.get("Retry-After", "")
    retry_after = int(retry_after) if retry_after.isdigit() else None
    try:
        body = json.load(error)["error"]
        return GatewayError(error.code, body["code"], body["message"], retry_after)
    except (ValueError, KeyError, TypeError):
        return GatewayError(error.code, "http_error", error.reason, retry_after)


def _server_sent_events(response):
    """Parses a text/event-stream: yields (id, event, data, retry) per message; comments are skipped."""
    event_id, event, data, retry = None, "message", [], None
    for raw in response:
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data or event_id is not None:
                yield event_id, event, json.loads("\n".join(data)) if data else None, retry
            event_id, event, data, retry = None, "message", [], None
            continue
        if line.startswith(":"):  # a comment: the keep-alive
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "id":
            event_id = value
        elif field == "event":
            event = value
        elif field == "data":
            data.append(value)
        elif field == "retry" and value.isdigit():
            retry = int(value)


def verify_webhook(header, body, secret, tolerance=300):
    """Whether `body` (bytes, as received) was signed with `secret` within `tolerance` seconds.

    `header` is the `Gcx-Signature` header: `t=<unix time>,v1=<hex HMAC-SHA-256 of "t.body">`.
    """
    fields = [[item.strip() for item in part.split("=", 1)] for part in header.split(",") if "=" in part]
    stamps = [value for name, value in fields if name == "t"]
    if len(stamps) != 1 or not stamps[0].isdigit() or abs(time.time() - int(stamps[0])) > tolerance:
        return False
    expected = hmac.new(secret.encode(), stamps[0].encode() + b"." + body, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(expected, value) for name, value in fields if name == "v1")


def receive_webhook(port, secret, received):
    """Starts a receiver on 127.0.0.1:`port` that verifies each delivery (400 if not).

    A verified delivery is answered 204 and kept in `received` (a dict, by event id) when its
    `Gcx-Event-Id` is its body's `id`, the first time only: a retry of an event already received is
    acknowledged, not acted on again. Which quote an event is of is for the caller to check
    (`evt_<quote id>`): a late retry of an earlier quote's event may come in at any time.
    """

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if not verify_webhook(self.headers.get("Gcx-Signature", ""), body, secret):
                self.send_response(400)
                self.end_headers()
                return
            self.send_response(204)  # 2xx: delivered (it is verified), whatever it is of
            self.end_headers()
            try:
                payload = json.loads(body)
            except ValueError:
                return
            event_id = self.headers.get("Gcx-Event-Id")
            if isinstance(payload, dict) and event_id is not None and payload.get("id") == event_id:
                received.setdefault(event_id, payload)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", port), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def progress_line(event, data):
    """One line for one event."""
    if event == "Progress":
        done = sum(1 for step in data.get("steps", []) if step.get("isCompleted"))
        return f"progress {data['percentComplete']}% ({done}/{len(data.get('steps', []))} steps)"
    if event == "StepCompleted":
        return f"step {data['descriptionTag']} completed"
    if event == "Retrying":
        return f"retrying (attempt {data['attempt']}): {data['reason']}"
    return event.lower()


def outcome_line(quote):
    """The outcome of a quote resource, in one line."""
    if quote["status"] == "completed":
        o = quote["outcome"]
        return (f"completed {quote['id']}: actual {o['actualCardValue']}, exchange {o['exchangeCardValue']}"
                f" (transaction {o['transactionId']})")
    error = quote.get("error", {})
    return f"failed {quote['id']}: {error.get('code')} ({error.get('group')}): {error.get('userMessage', '')}"


def main(argv=None):
    parser = argparse.ArgumentParser(description="Submit a quote to gcx serve and follow it to its outcome.")
    parser.add_argument("--url", default=os.environ.get("GCX_GATEWAY_URL", "http://127.0.0.1:8790"))
    parser.add_argument("--card", required=True, help="the card number")
    parser.add_argument("--pin", required=True, help="the card's PIN")
    parser.add_argument("--product-line", default="1000", help="the product line id (default 1000)")
    parser.add_argument("--idempotency-key", default=None, help="default: a new UUID")
    parser.add_argument("--webhook-port", type=int, default=None,
                        help="receive the quote's webhook on 127.0.0.1:PORT (secret: GCX_WEBHOOK_SECRET)")
    parser.add_argument("--webhook-timeout", type=float, default=60)
    parser.add_argument("--wait", type=int, default=None, metavar="SECONDS",
                        help="let the POST wait up to SECONDS (at most 30) for the outcome, "
                             "instead of following the events")
    args = parser.parse_args(argv)
    key = os.environ.get("GCX_GATEWAY_KEY")
    if not key:
        parser.error("GCX_GATEWAY_KEY is not set (the gateway API key, gcx_sk_...)")
    secret = os.environ.get("GCX_WEBHOOK_SECRET")
    if args.webhook_port is not None and not secret:
        parser.error("--webhook-port needs GCX_WEBHOOK_SECRET (the endpoint's whsec_... secret)")

    received = {}
    receiver = receive_webhook(args.webhook_port, secret, received) if args.webhook_port is not None else None
    # a POST that waits may first wait up to 10 s for the gateway's database: the timeout leaves room for both
    gateway = Gateway(args.url, key, timeout=max(40, (args.wait or 0) + 15))
    try:
        card = {"cardNumber": args.card, "pinNumber": args.pin, "productLineId": args.product_line}
        quote = gateway.submit(card, args.idempotency_key or str(uuid.uuid4()), args.wait)
        del card  # keep no card data around
        print(f"submitted {quote['id']} ({quote['status']})", flush=True)
        # the quote itself (a 200 of a POST that waited: it has ended) has its percentage; a 202 has not
        if "percentComplete" not in quote:
            if quote["status"] == "pending":  # its events to the end
                for event_id, event, data in gateway.events(quote["id"]):
                    print(f"event {event_id} {progress_line(event, data)}", flush=True)
            quote = gateway.get(quote["id"])
        print(outcome_line(quote), flush=True)
        if receiver is not None:
            event_id = f"evt_{quote['id']}"  # this quote's event: any other is not acted on
            deadline = time.monotonic() + args.webhook_timeout
            while event_id not in received and time.monotonic() < deadline:
                time.sleep(0.1)
            for other in sorted(set(received) - {event_id}):
                print(f"webhook {other} ignored: not this quote's", file=sys.stderr)
            if event_id not in received:
                raise TimeoutError(f"no verified webhook {event_id} within {args.webhook_timeout:g} s")
            payload = received[event_id]
            print(f"webhook {event_id} {payload['type']} verified: {payload['data']['status']}", flush=True)
        return 0 if quote["status"] == "completed" else EXIT_CODES.get(quote.get("error", {}).get("group"), 5)
    except GatewayError as error:
        print(f"client.py: the gateway refused: {error}", file=sys.stderr)
        return 2
    except (OSError, ConnectionError, TimeoutError) as error:
        print(f"client.py: {error}", file=sys.stderr)
        return 5
    finally:
        if receiver is not None:
            receiver.shutdown()


if __name__ == "__main__":
    sys.exit(main())
