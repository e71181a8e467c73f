"""Smoke test of the Python client generated from openapi.yaml (openapi-python-client),
against a live demo server: a 201, its replay, a 409 and a 402 must each parse into
their typed model, errors included (a generator that drops a problem schema parses
them as None). Usage: python_smoke.py BASE_URL (the generated package on PYTHONPATH)."""

import sys
import uuid

from idempay_client import AuthenticatedClient
from idempay_client.api.idempotency_keys import get_idempotency_key
from idempay_client.api.orders import create_order
from idempay_client.api.payments import create_payment
from idempay_client.models import (
    CreateOrderResponse409,
    Currency,
    DeclineProblem,
    IdempotencyKeyRecord,
    Order,
    OrderCreate,
    Payment,
    PaymentCreate,
    PaymentCreatePaymentMethod,
)


def check(condition, what):
    if not condition:
        raise SystemExit(f"FAIL: {what}")
    print(f"ok: {what}")


def main(base):
    client = AuthenticatedClient(base_url=base, token="sk_test_demo")
    key = str(uuid.uuid4())
    body = OrderCreate(amount=1999, currency=Currency.EUR)

    first = create_order.sync_detailed(client=client, body=body, idempotency_key=key)
    check(first.status_code == 201 and isinstance(first.parsed, Order), "201 parses as Order")
    replay = create_order.sync_detailed(client=client, body=body, idempotency_key=key)
    check(
        replay.status_code == 201
        and isinstance(replay.parsed, Order)
        and replay.parsed.id == first.parsed.id
        and replay.headers.get("Idempotent-Replayed") == "true",
        "the replay parses as the same Order, marked Idempotent-Replayed",
    )
    check(replay.content == first.content, "the replay is byte-identical")
    check("Idempotency-Key-Expires" in replay.headers, "the replay tells when the key expires")

    other = OrderCreate(amount=2000, currency=Currency.EUR)
    reused = create_order.sync_detailed(client=client, body=other, idempotency_key=key)
    check(
        reused.status_code == 409
        and isinstance(reused.parsed, CreateOrderResponse409)
        and reused.parsed.code.value == "idempotency_key_reused",
        "409 parses as its problem, code idempotency_key_reused",
    )

    payment = PaymentCreate(
        order_id=first.parsed.id, payment_method=PaymentCreatePaymentMethod.PM_CARD_DECLINED
    )
    declined = create_payment.sync_detailed(
        client=client, body=payment, idempotency_key=str(uuid.uuid4())
    )
    check(
        declined.status_code == 402
        and isinstance(declined.parsed, DeclineProblem)
        and declined.parsed.code.value == "card_declined"
        and declined.parsed.payment_id.startswith("pay_"),
        "402 parses as DeclineProblem with its payment_id",
    )

    pay_key = str(uuid.uuid4())
    visa = PaymentCreate(
        order_id=create_order.sync(
            client=client, body=body, idempotency_key=str(uuid.uuid4())
        ).id,
        payment_method=PaymentCreatePaymentMethod.PM_CARD_VISA,
    )
    paid = create_payment.sync_detailed(client=client, body=visa, idempotency_key=pay_key)
    check(paid.status_code == 201 and isinstance(paid.parsed, Payment), "201 parses as Payment")
    record = get_idempotency_key.sync_detailed(client=client, key=pay_key)
    check(
        isinstance(record.parsed, IdempotencyKeyRecord)
        and record.parsed.status.value == "succeeded",
        "the key's record parses as IdempotencyKeyRecord, succeeded",
    )


if __name__ == "__main__":
    main(sys.argv[1])
