"""Held-out search benchmark, half B: a catalog of commerce, messaging, CRM, data and cloud APIs
and labelled queries against it.

:func:`heldout_catalog_b` returns operations modelled on the public APIs (or public MCP servers)
of Shopify Admin, Stripe, Twilio, Zoom, HubSpot CRM, Airtable, a Postgres MCP server and, under
the ``cloud`` namespace, AWS S3, EC2 and Lambda: their resource names, verbs and terse,
jargon-heavy descriptions, confusable neighbours included (list vs search vs get, archive vs
delete, two ``refunds.create`` in two apps, a CRM ``calls.create`` beside a telephony one).

:data:`QUERIES_B` holds queries a model would type as one search after reading a user's request,
each with two more phrasings it would try at the same time and every operation path that would
satisfy the need.

Both were written blind, before any search engine ran on them: no ranking was consulted while
writing the descriptions, the queries or their labels. This set is held out. Never tune the
engine, its weights or its vocabulary against it, and never edit it after seeing its scores;
a change to it is a new held-out set, to be written blind again.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from catalogs import LabelledQuery, _app, p, read, write

from mycelium import Module

__all__ = ["QUERIES_B", "heldout_catalog_b"]


# --------------------------------------------------------------------------------------
# Shopify Admin
# --------------------------------------------------------------------------------------


def _shopify() -> Module:
    product_id = p("product_id", int, "The ID of the product.")
    order_id = p("order_id", int, "The ID of the order.")
    limit = p("limit", int, "The maximum number of results to show (maximum: 250).", 50)
    page_info = p("page_info", str | None, "A unique ID used to access a certain page of results.", None)
    fields = p("fields", str | None, "Show only certain fields, specified by a comma-separated list of names.", None)
    return _app(
        "shopify",
        "Shopify Admin API: a store's products, orders, fulfillments, customers, inventory and discounts.",
        {
            "products.list": read(
                "Retrieves a list of products. Uses cursor-based pagination.",
                p("ids", str | None, "Return only products specified by a comma-separated list of product IDs.", None),
                p("title", str | None, "Return products by product title.", None),
                p("vendor", str | None, "Return products by product vendor.", None),
                p("product_type", str | None, "Return products by product type.", None),
                p("collection_id", int | None, "Return products by product collection ID.", None),
                p(
                    "status",
                    Literal["active", "archived", "draft"] | None,
                    "Return products by their status.",
                    None,
                ),
                limit,
                page_info,
            ),
            "products.get": read("Retrieves a single product.", product_id, fields),
            "products.create": write(
                "Creates a new product.",
                p("title", str, "The name of the product."),
                p("body_html", str | None, "A description of the product. Supports HTML formatting.", None),
                p("vendor", str | None, "The name of the product's vendor.", None),
                p(
                    "product_type",
                    str | None,
                    "A categorization for the product used for filtering and searching.",
                    None,
                ),
                p("tags", str | None, "A string of comma-separated tags used for filtering and search.", None),
                p(
                    "status",
                    Literal["active", "archived", "draft"],
                    "The status of the product. active: ready to sell; archived: no longer being sold; draft: "
                    "not ready to sell.",
                    "draft",
                ),
            ),
            "products.update": write(
                "Updates a product and its variants and images.",
                product_id,
                p("title", str | None, "The name of the product.", None),
                p("body_html", str | None, "A description of the product. Supports HTML formatting.", None),
                p("tags", str | None, "A string of comma-separated tags; replaces the existing tags.", None),
                p(
                    "status",
                    Literal["active", "archived", "draft"] | None,
                    "The status of the product. Setting archived or draft removes it from sales channels.",
                    None,
                ),
            ),
            "products.delete": write("Deletes a product.", product_id, confirm=True),
            "variants.list": read(
                "Retrieves a list of product variants.",
                product_id,
                limit,
                page_info,
            ),
            "variants.update": write(
                "Modifies an existing product variant.",
                p("variant_id", int, "The ID of the product variant."),
                p("price", str | None, "The price of the product variant.", None),
                p(
                    "compare_at_price",
                    str | None,
                    "The original price of the item before an adjustment or a sale.",
                    None,
                ),
                p("sku", str | None, "A unique identifier for the product variant in the shop.", None),
                p("barcode", str | None, "The barcode, UPC, or ISBN number for the product.", None),
                p("option1", str | None, "The custom property that a shop owner uses to define variants.", None),
            ),
            "orders.list": read(
                "Retrieves a list of orders.",
                p(
                    "status",
                    Literal["open", "closed", "cancelled", "any"],
                    "Filter orders by their status.",
                    "open",
                ),
                p(
                    "financial_status",
                    Literal[
                        "authorized",
                        "pending",
                        "paid",
                        "partially_paid",
                        "refunded",
                        "voided",
                        "partially_refunded",
                        "unpaid",
                        "any",
                    ]
                    | None,
                    "Filter orders by their financial status.",
                    None,
                ),
                p(
                    "fulfillment_status",
                    Literal["shipped", "partial", "unshipped", "unfulfilled", "any"] | None,
                    "Filter orders by their fulfillment status.",
                    None,
                ),
                p("created_at_min", datetime | None, "Show orders created at or after date.", None),
                p("created_at_max", datetime | None, "Show orders created at or before date.", None),
                limit,
                page_info,
            ),
            "orders.get": read("Retrieves a specific order.", order_id, fields),
            "orders.update": write(
                "Updates an order: its note, tags, email, phone or shipping address.",
                order_id,
                p("note", str | None, "An optional note that a shop owner can attach to the order.", None),
                p(
                    "tags",
                    str | None,
                    "Tags attached to the order, formatted as a string of comma-separated values.",
                    None,
                ),
                p("email", str | None, "The customer's email address.", None),
                p(
                    "shipping_address",
                    dict[str, str] | None,
                    "The mailing address to where the order will be shipped.",
                    None,
                ),
            ),
            "orders.cancel": write(
                "Cancels an order. Orders that are paid and have fulfillments can't be canceled.",
                order_id,
                p(
                    "reason",
                    Literal["customer", "inventory", "fraud", "declined", "other"],
                    "The reason for the order cancellation.",
                    "other",
                ),
                p("restock", bool, "Whether to restock refunded items back to your store's inventory.", False),
                p("email", bool, "Whether to send an email to the customer notifying them of the cancellation.", False),
                confirm=True,
            ),
            "orders.close": write("Closes an order.", order_id),
            "refunds.calculate": read(
                "Calculates refund transactions based on line items and shipping. Use this endpoint to generate "
                "the transactions to submit when creating a refund.",
                order_id,
                p(
                    "refund_line_items",
                    list[dict[str, Any]],
                    "A list of line item IDs, quantities and restock types.",
                    [],
                ),
                p(
                    "shipping",
                    dict[str, Any] | None,
                    "Whether to refund shipping costs: full_refund or an amount.",
                    None,
                ),
            ),
            "refunds.create": write(
                "Creates a refund for an order. Use the calculate endpoint to produce the transactions to submit.",
                order_id,
                p(
                    "refund_line_items",
                    list[dict[str, Any]],
                    "A list of line item IDs, quantities to refund and restock types.",
                ),
                p("transactions", list[dict[str, Any]], "A list of transactions to process as refunds."),
                p("note", str | None, "An optional note attached to a refund.", None),
                p("notify", bool, "Whether to send a refund notification to the customer.", True),
                confirm=True,
            ),
            "fulfillment_orders.list": read(
                "Retrieves a list of fulfillment orders for a specific order.",
                order_id,
            ),
            "fulfillments.create": write(
                "Creates a fulfillment for one or many fulfillment orders. The fulfillment orders must belong to "
                "the same order and be assigned to the same location.",
                p(
                    "line_items_by_fulfillment_order",
                    list[dict[str, Any]],
                    "The fulfillment order line items to be fulfilled.",
                ),
                p("tracking_number", str | None, "The tracking number of the fulfillment.", None),
                p("tracking_company", str | None, "The name of the tracking company.", None),
                p("tracking_url", str | None, "The URL to track the fulfillment.", None),
                p("notify_customer", bool, "Whether the customer is notified.", False),
            ),
            "fulfillments.update_tracking": write(
                "Updates the tracking information for a fulfillment.",
                p("fulfillment_id", int, "The ID of the fulfillment."),
                p("tracking_number", str | None, "The tracking number of the fulfillment.", None),
                p("tracking_company", str | None, "The name of the tracking company.", None),
                p("tracking_url", str | None, "The URL to track the fulfillment.", None),
                p("notify_customer", bool, "Whether the customer is notified.", False),
            ),
            "customers.search": read(
                "Searches for customers that match a supplied query.",
                p("query", str, "Text to search for in the shop's customer data, e.g. 'email:bob@example.com'."),
                p("order", str, "Set the field and direction by which to order results.", "last_order_date DESC"),
                limit,
            ),
            "customers.create": write(
                "Creates a customer.",
                p("first_name", str | None, "The customer's first name.", None),
                p("last_name", str | None, "The customer's last name.", None),
                p("email", str | None, "The unique email address of the customer.", None),
                p("phone", str | None, "The unique phone number (E.164 format) for this customer.", None),
                p("tags", str | None, "Tags that the shop owner has attached to the customer.", None),
                p("send_email_invite", bool, "Whether to send an account invitation email.", False),
            ),
            "customers.orders.list": read(
                "Retrieves all orders that belong to a customer.",
                p("customer_id", int, "The ID of the customer."),
                p("status", Literal["open", "closed", "cancelled", "any"], "Filter orders by their status.", "any"),
            ),
            "inventory_levels.list": read(
                "Retrieves a list of inventory levels. Include inventory_item_ids, location_ids, or both.",
                p("inventory_item_ids", str | None, "A comma-separated list of inventory item IDs.", None),
                p("location_ids", str | None, "A comma-separated list of location IDs.", None),
                limit,
            ),
            "inventory_levels.adjust": write(
                "Adjusts the inventory level of an inventory item at a single location.",
                p("inventory_item_id", int, "The ID of the inventory item."),
                p("location_id", int, "The ID of the location that the inventory level belongs to."),
                p("available_adjustment", int, "The amount to adjust the available inventory quantity by."),
            ),
            "inventory_levels.set": write(
                "Sets the inventory level for an inventory item at a location. If the location is not connected, "
                "it is connected automatically first.",
                p("inventory_item_id", int, "The ID of the inventory item."),
                p("location_id", int, "The ID of the location that the inventory level belongs to."),
                p("available", int, "Sets the available inventory quantity."),
            ),
            "price_rules.create": write(
                "Creates a price rule. A price rule holds the conditions and value of a discount; discount codes "
                "are created against it.",
                p("title", str, "The title of the price rule; used internally."),
                p("value_type", Literal["fixed_amount", "percentage"], "The value type of the price rule."),
                p("value", str, "The value of the price rule, as a negative number, e.g. '-10.0'."),
                p("target_type", Literal["line_item", "shipping_line"], "The target type that the rule applies to."),
                p("allocation_method", Literal["each", "across"], "The allocation method of the price rule.", "across"),
                p("starts_at", datetime, "The date and time when the price rule starts."),
                p("ends_at", datetime | None, "The date and time when the price rule ends.", None),
                p("usage_limit", int | None, "The maximum number of times the price rule can be used.", None),
                p("once_per_customer", bool, "Whether the rule can be used only once per customer.", False),
            ),
            "discount_codes.create": write(
                "Creates a discount code for a price rule.",
                p("price_rule_id", int, "The ID of the price rule."),
                p("code", str, "The case-insensitive code that customers enter at checkout."),
            ),
            "discount_codes.lookup": read(
                "Retrieves the location of a discount code: its ID and price rule, by code.",
                p("code", str, "The discount code."),
            ),
        },
    )


# --------------------------------------------------------------------------------------
# Stripe
# --------------------------------------------------------------------------------------


def _stripe() -> Module:
    customer = p("customer", str, "The ID of the customer.")
    limit = p("limit", int, "A limit on the number of objects to be returned, between 1 and 100.", 10)
    starting_after = p("starting_after", str | None, "A cursor for use in pagination: an object ID.", None)
    metadata = p("metadata", dict[str, str] | None, "Set of key-value pairs to attach to the object.", None)
    invoice = p("invoice", str, "The ID of the invoice.")
    subscription = p("subscription", str, "The ID of the subscription.")
    dispute = p("dispute", str, "The ID of the dispute.")
    amount = p("amount", int, "Amount intended to be collected, in the smallest currency unit (e.g. 100 cents).")
    currency = p("currency", str, "Three-letter ISO currency code, in lowercase.", "usd")
    return _app(
        "stripe",
        "Stripe API: customers, payments, refunds, subscriptions, invoices, payouts and disputes.",
        {
            "customers.create": write(
                "Creates a new customer object.",
                p("email", str | None, "Customer's email address.", None),
                p("name", str | None, "The customer's full name or business name.", None),
                p("phone", str | None, "The customer's phone number.", None),
                p("payment_method", str | None, "The ID of the PaymentMethod to attach to the customer.", None),
                metadata,
            ),
            "customers.retrieve": read("Retrieves a Customer object.", customer),
            "customers.update": write(
                "Updates the specified customer by setting the values of the parameters passed.",
                customer,
                p("email", str | None, "Customer's email address.", None),
                p("name", str | None, "The customer's full name or business name.", None),
                p("address", dict[str, str] | None, "The customer's address.", None),
                p("invoice_settings", dict[str, Any] | None, "Default invoice settings for this customer.", None),
                metadata,
            ),
            "customers.search": read(
                "Search for customers you've previously created using Stripe's Search Query Language.",
                p("query", str, "The search query string, e.g. \"email:'jenny@example.com'\"."),
                limit,
            ),
            "payment_intents.create": write(
                "Creates a PaymentIntent object: tracks a payment from creation through checkout.",
                amount,
                currency,
                p("customer", str | None, "ID of the Customer this PaymentIntent belongs to.", None),
                p("payment_method", str | None, "ID of the payment method to attach.", None),
                p(
                    "capture_method",
                    Literal["automatic", "automatic_async", "manual"],
                    "Controls when the funds are captured from the customer's account.",
                    "automatic_async",
                ),
                p("confirm", bool, "Set to true to attempt to confirm this PaymentIntent immediately.", False),
                p("description", str | None, "An arbitrary string attached to the object.", None),
            ),
            "payment_intents.capture": write(
                "Capture the funds of an existing uncaptured PaymentIntent when its status is requires_capture.",
                p("intent", str, "The ID of the PaymentIntent."),
                p("amount_to_capture", int | None, "The amount to capture, which must be <= amount_capturable.", None),
            ),
            "payment_intents.cancel": write(
                "Cancels a PaymentIntent. Releases any uncaptured funds held on the card.",
                p("intent", str, "The ID of the PaymentIntent."),
                p(
                    "cancellation_reason",
                    Literal["duplicate", "fraudulent", "requested_by_customer", "abandoned"] | None,
                    "Reason for canceling this PaymentIntent.",
                    None,
                ),
            ),
            "charges.list": read(
                "Returns a list of charges you've previously created, most recent first.",
                p("customer", str | None, "Only return charges for the customer specified by this customer ID.", None),
                p("created", dict[str, int] | None, "Only return charges created during the given range.", None),
                p("payment_intent", str | None, "Only return charges created by this PaymentIntent.", None),
                limit,
                starting_after,
            ),
            "charges.retrieve": read(
                "Retrieves the details of a charge that has previously been created.",
                p("charge", str, "The ID of the charge."),
            ),
            "refunds.create": write(
                "Create a refund: refunds a charge or PaymentIntent that has previously been created, in full or "
                "in part. Funds are returned to the card that was originally charged.",
                p("charge", str | None, "The identifier of the charge to refund.", None),
                p("payment_intent", str | None, "The identifier of the PaymentIntent to refund.", None),
                p("amount", int | None, "A positive integer in cents representing how much to refund.", None),
                p(
                    "reason",
                    Literal["duplicate", "fraudulent", "requested_by_customer"] | None,
                    "String indicating the reason for the refund.",
                    None,
                ),
                confirm=True,
            ),
            "subscriptions.create": write(
                "Creates a new subscription on an existing customer.",
                customer,
                p("items", list[dict[str, Any]], "A list of up to 20 subscription items, each with a price."),
                p("trial_period_days", int | None, "Integer representing the number of trial days.", None),
                p(
                    "collection_method",
                    Literal["charge_automatically", "send_invoice"],
                    "How to collect payment for the subscription.",
                    "charge_automatically",
                ),
                p("coupon", str | None, "The ID of the coupon to apply to this subscription.", None),
            ),
            "subscriptions.update": write(
                "Updates an existing subscription to match the specified parameters. When changing prices or "
                "quantities, proration is calculated by default.",
                subscription,
                p("items", list[dict[str, Any]] | None, "A list of subscription items to update.", None),
                p("cancel_at_period_end", bool | None, "Whether to cancel at the end of the current period.", None),
                p(
                    "proration_behavior",
                    Literal["always_invoice", "create_prorations", "none"],
                    "Determines how to handle prorations when the billing cycle changes.",
                    "create_prorations",
                ),
                p("pause_collection", dict[str, Any] | None, "If specified, payment collection is paused.", None),
            ),
            "subscriptions.cancel": write(
                "Cancels a customer's subscription immediately. The customer will not be charged again.",
                subscription,
                p("invoice_now", bool, "Generate a final invoice for any un-invoiced metered usage.", False),
                p("prorate", bool, "Generate a proration invoice item for unused time.", False),
                confirm=True,
            ),
            "subscriptions.list": read(
                "By default, returns a list of subscriptions that have not been canceled.",
                p("customer", str | None, "The ID of the customer whose subscriptions will be retrieved.", None),
                p("price", str | None, "Filter for subscriptions that contain this recurring price ID.", None),
                p(
                    "status",
                    Literal["active", "past_due", "unpaid", "canceled", "incomplete", "trialing", "all"] | None,
                    "The status of the subscriptions to retrieve.",
                    None,
                ),
                limit,
                starting_after,
            ),
            "invoices.create": write(
                "Creates a draft invoice for a given customer. The invoice remains a draft until you finalize it.",
                customer,
                p(
                    "collection_method",
                    Literal["charge_automatically", "send_invoice"],
                    "Either charge_automatically, or send_invoice.",
                    "charge_automatically",
                ),
                p("days_until_due", int | None, "The number of days until the invoice is due (send_invoice).", None),
                p("description", str | None, "An arbitrary string, displayed as 'memo' in the Dashboard.", None),
            ),
            "invoices.finalize": write(
                "Finalizes a draft invoice. Stripe finalizes drafts automatically after about an hour; use this "
                "to finalize it manually.",
                invoice,
                p("auto_advance", bool | None, "Controls whether Stripe performs automatic collection.", None),
            ),
            "invoices.send": write(
                "Sends an invoice for manual payment. Stripe emails the customer the invoice.",
                invoice,
            ),
            "invoices.void": write(
                "Marks a finalized invoice as void. This cannot be undone.",
                invoice,
                confirm=True,
            ),
            "invoices.list": read(
                "Returns a list of your invoices, sorted by creation date, most recent first.",
                p("customer", str | None, "Only return invoices for the customer specified by this customer ID.", None),
                p(
                    "status",
                    Literal["draft", "open", "paid", "uncollectible", "void"] | None,
                    "The status of the invoice.",
                    None,
                ),
                p("subscription", str | None, "Only return invoices for this subscription ID.", None),
                limit,
                starting_after,
            ),
            "invoices.upcoming": read(
                "Retrieve an upcoming invoice: the invoice a customer will be billed next for a subscription, "
                "including pending invoice items and proration.",
                customer,
                p("subscription", str | None, "The identifier of the subscription to preview.", None),
            ),
            "payment_links.create": write(
                "Creates a payment link: a shareable URL to a hosted payment page.",
                p(
                    "line_items",
                    list[dict[str, Any]],
                    "The line items representing what is being sold (price, quantity).",
                ),
                p("after_completion", dict[str, Any] | None, "Behavior after the purchase is complete.", None),
                p("allow_promotion_codes", bool, "Enables user redeemable promotion codes.", False),
            ),
            "payouts.create": write(
                "Creates a payout to your own bank account or debit card from your Stripe balance.",
                amount,
                currency,
                p("destination", str | None, "The ID of a bank account or a card to send the payout to.", None),
                p("method", Literal["standard", "instant"], "The method used to send this payout.", "standard"),
                confirm=True,
            ),
            "payouts.list": read(
                "Returns a list of existing payouts sent to third-party bank accounts or that Stripe sent to you.",
                p(
                    "status",
                    Literal["pending", "paid", "failed", "canceled"] | None,
                    "Only return payouts that have the given status.",
                    None,
                ),
                p("arrival_date", dict[str, int] | None, "Only return payouts expected to arrive in this range.", None),
                limit,
                starting_after,
            ),
            "disputes.list": read(
                "Returns a list of your disputes. A dispute occurs when a customer questions a charge with their "
                "card issuer.",
                p(
                    "charge",
                    str | None,
                    "Only return disputes associated to the charge specified by this charge ID.",
                    None,
                ),
                p("created", dict[str, int] | None, "Only return disputes created during the given range.", None),
                limit,
                starting_after,
            ),
            "disputes.update": write(
                "Updates a dispute with evidence. Set submit to false to stage evidence without submitting it.",
                dispute,
                p(
                    "evidence",
                    dict[str, str],
                    "Evidence to upload, to respond to a dispute (receipts, tracking, logs).",
                ),
                p("submit", bool, "Whether to immediately submit evidence to the bank.", True),
            ),
            "disputes.close": write(
                "Closes a dispute: you have no evidence to submit and accept it as lost. Cannot be undone.",
                dispute,
                confirm=True,
            ),
            "balance.retrieve": read(
                "Retrieves the current account balance: available and pending funds, by currency.",
            ),
        },
    )


# --------------------------------------------------------------------------------------
# Twilio
# --------------------------------------------------------------------------------------


def _twilio() -> Module:
    to = p("to", str, "The destination phone number in E.164 format.")
    from_ = p("from_", str, "A Twilio phone number in E.164 format, or an alphanumeric sender ID.")
    page_size = p("page_size", int, "How many resources to return in each list page.", 50)
    return _app(
        "twilio",
        "Twilio: programmable messaging, voice calls, phone numbers, Verify and Lookup.",
        {
            "messages.create": write(
                "Send a new outgoing message (SMS, MMS or WhatsApp).",
                to,
                from_,
                p("body", str, "The text content of the outgoing message. Up to 1,600 characters."),
                p("media_url", list[str], "The URL of media to include in the message (MMS).", []),
                p("status_callback", str | None, "The URL Twilio sends message status updates to.", None),
            ),
            "messages.list": read(
                "Read multiple Message resources associated with your account.",
                p("to", str | None, "Filter by recipient.", None),
                p("from_", str | None, "Filter by sender.", None),
                p("date_sent_after", datetime | None, "Filter by messages sent on or after this date.", None),
                page_size,
            ),
            "messages.fetch": read(
                "Fetch a specific Message: its status, error code, price and segments.",
                p("sid", str, "The SID of the Message resource to fetch (SM...)."),
            ),
            "calls.create": write(
                "Create an outbound call to a phone number, SIP address or client.",
                to,
                from_,
                p("url", str | None, "The absolute URL that returns TwiML instructions for the call.", None),
                p("twiml", str | None, "TwiML instructions for the call; ignores url when set.", None),
                p("record", bool, "Whether to record the call.", False),
                p("timeout", int, "The seconds to let the call ring before assuming there is no answer.", 60),
            ),
            "calls.list": read(
                "Retrieves a collection of calls made to and from your account.",
                p("to", str | None, "Only show calls made to this phone number.", None),
                p("from_", str | None, "Only include calls from this phone number.", None),
                p(
                    "status",
                    Literal["queued", "ringing", "in-progress", "canceled", "completed", "failed", "busy", "no-answer"]
                    | None,
                    "The status of the calls to include.",
                    None,
                ),
                p("start_time_after", datetime | None, "Only include calls that started on or after this date.", None),
                page_size,
            ),
            "calls.update": write(
                "Modify a call in progress: redirect it to new TwiML, or end it.",
                p("sid", str, "The SID of the Call resource to update (CA...)."),
                p(
                    "status",
                    Literal["canceled", "completed"] | None,
                    "canceled ends a queued or ringing call; completed ends an in-progress call.",
                    None,
                ),
                p("url", str | None, "The absolute URL that returns the TwiML to redirect the call to.", None),
                p("twiml", str | None, "TwiML instructions for the call.", None),
            ),
            "recordings.list": read(
                "Retrieve a list of call recordings belonging to the account.",
                p("call_sid", str | None, "The Call SID of the resources to read.", None),
                p(
                    "date_created_after",
                    datetime | None,
                    "Only include recordings created on or after this date.",
                    None,
                ),
                page_size,
            ),
            "incoming_phone_numbers.list": read(
                "Retrieve a list of IncomingPhoneNumber resources: the phone numbers provisioned on the account.",
                p("phone_number", str | None, "The phone numbers to read; may contain a partial number.", None),
                p("friendly_name", str | None, "A string that identifies the resources to read.", None),
                page_size,
            ),
            "incoming_phone_numbers.create": write(
                "Provision a phone number: purchase an available number and add it to the account.",
                p("phone_number", str | None, "The phone number to purchase, in E.164 format.", None),
                p("area_code", str | None, "The desired area code; Twilio picks an available number.", None),
                p("friendly_name", str | None, "A descriptive string for the new phone number.", None),
                p("sms_url", str | None, "The URL Twilio calls when the number receives an incoming message.", None),
                p("voice_url", str | None, "The URL Twilio calls when the number receives a call.", None),
                confirm=True,
            ),
            "incoming_phone_numbers.delete": write(
                "Release this phone number from your account. Twilio will no longer answer calls to it, and "
                "billing for it stops.",
                p("sid", str, "The SID of the IncomingPhoneNumber resource to delete (PN...)."),
                confirm=True,
            ),
            "available_phone_numbers.list": read(
                "Search for phone numbers available for purchase in a country.",
                p("country_code", str, "The ISO-3166-1 country code of the country.", "US"),
                p("type", Literal["local", "toll_free", "mobile"], "The kind of number to search for.", "local"),
                p("area_code", int | None, "The area code of the phone numbers to read (US and Canada).", None),
                p("contains", str | None, "The pattern on which to match phone numbers, e.g. '510555****'.", None),
                p("sms_enabled", bool | None, "Whether the numbers can receive text messages.", None),
                p("voice_enabled", bool | None, "Whether the numbers can receive calls.", None),
            ),
            "verify.verifications.create": write(
                "Start a new verification: send a one-time code to a phone number or email via SMS, voice, "
                "WhatsApp or email.",
                p("service_sid", str, "The SID of the Verify Service (VA...)."),
                p("to", str, "The phone number or email to verify, phone numbers in E.164 format."),
                p(
                    "channel",
                    Literal["sms", "call", "email", "whatsapp"],
                    "The verification method to use.",
                    "sms",
                ),
                p("locale", str | None, "The locale to use for the verification message.", None),
            ),
            "verify.verification_checks.create": write(
                "Check a verification code: approves the verification when the code matches.",
                p("service_sid", str, "The SID of the Verify Service (VA...)."),
                p("to", str, "The phone number or email being verified."),
                p("code", str, "The 4-10 character string being verified."),
            ),
            "lookups.phone_numbers.fetch": read(
                "Lookup a phone number: validate and format it, and optionally return carrier, line type and "
                "caller name.",
                p("phone_number", str, "The phone number to lookup, in E.164 or national format."),
                p(
                    "fields",
                    str | None,
                    "Comma-separated data packages, e.g. 'line_type_intelligence,caller_name'.",
                    None,
                ),
                p("country_code", str | None, "The country code for national-format numbers.", None),
            ),
        },
    )


# --------------------------------------------------------------------------------------
# Zoom
# --------------------------------------------------------------------------------------


def _zoom() -> Module:
    user_id = p("user_id", str, "The user's ID or email address. Use 'me' for the current user.", "me")
    meeting_id = p("meeting_id", int, "The meeting's ID.")
    page_size = p("page_size", int, "The number of records returned within a single API call.", 30)
    next_page_token = p("next_page_token", str | None, "The token to paginate through large result sets.", None)
    return _app(
        "zoom",
        "Zoom API: meetings, webinars, cloud recordings and users.",
        {
            "meetings.create": write(
                "Create a meeting for a user.",
                user_id,
                p("topic", str, "The meeting's topic."),
                p(
                    "type",
                    Literal[1, 2, 3, 8],
                    "The type of meeting: 1 instant, 2 scheduled, 3 recurring with no fixed time, 8 recurring.",
                    2,
                ),
                p("start_time", datetime | None, "The meeting's start time (scheduled meetings).", None),
                p("duration", int, "The meeting's scheduled duration, in minutes.", 60),
                p("timezone", str | None, "The timezone to format start_time, e.g. America/Los_Angeles.", None),
                p("agenda", str | None, "The meeting's agenda (description).", None),
                p("settings", dict[str, Any] | None, "Meeting settings: waiting_room, join_before_host, etc.", None),
            ),
            "meetings.get": read(
                "Retrieve the given meeting's details: topic, start time, join URL, password and settings.",
                meeting_id,
                p("occurrence_id", str | None, "Meeting occurrence ID, for recurring meetings.", None),
            ),
            "meetings.list": read(
                "List a user's (meeting host) scheduled meetings.",
                user_id,
                p(
                    "type",
                    Literal["scheduled", "live", "upcoming", "upcoming_meetings", "previous_meetings"],
                    "The type of meeting.",
                    "scheduled",
                ),
                page_size,
                next_page_token,
            ),
            "meetings.update": write(
                "Update the details of a meeting: topic, start time, duration, agenda or settings.",
                meeting_id,
                p("topic", str | None, "The meeting's topic.", None),
                p("start_time", datetime | None, "The meeting's start time.", None),
                p("duration", int | None, "The meeting's scheduled duration, in minutes.", None),
                p("agenda", str | None, "The meeting's agenda.", None),
                p("settings", dict[str, Any] | None, "Meeting settings to change.", None),
            ),
            "meetings.delete": write(
                "Delete a meeting.",
                meeting_id,
                p("schedule_for_reminder", bool, "Notify the host and alternative host about the deletion.", True),
                p("cancel_meeting_reminder", bool, "Send cancellation emails to registrants.", False),
                confirm=True,
            ),
            "meetings.status.update": write(
                "Update the status of a meeting: end a live meeting, or recover a deleted one.",
                meeting_id,
                p("action", Literal["end", "recover"], "end: end a meeting; recover: recover a deleted meeting."),
            ),
            "meetings.invitation.get": read(
                "Retrieve the meeting invitation note for a specific meeting: join link, meeting ID, passcode "
                "and dial-in numbers as text.",
                meeting_id,
            ),
            "past_meetings.participants.list": read(
                "Return a list of participants from a past meeting with two or more participants.",
                p("meeting_uuid", str, "The past meeting's UUID, or its ID for the latest instance."),
                page_size,
                next_page_token,
            ),
            "webinars.create": write(
                "Schedule a webinar for a user with a webinar plan license.",
                user_id,
                p("topic", str, "The webinar's topic."),
                p("start_time", datetime, "The webinar's start time."),
                p("duration", int, "The webinar's duration, in minutes.", 60),
                p("agenda", str | None, "The webinar's agenda.", None),
                p("settings", dict[str, Any] | None, "Webinar settings: approval_type, panelists_video, etc.", None),
            ),
            "webinars.list": read(
                "List all the webinars scheduled by or on behalf of a webinar host.",
                user_id,
                page_size,
            ),
            "webinars.registrants.add": write(
                "Create a webinar registrant.",
                p("webinar_id", int, "The webinar's ID."),
                p("email", str, "The registrant's email address."),
                p("first_name", str, "The registrant's first name."),
                p("last_name", str | None, "The registrant's last name.", None),
            ),
            "recordings.list": read(
                "List all cloud recordings of a user, with their files and download URLs.",
                user_id,
                p("from_", str | None, "The start date in 'yyyy-mm-dd' UTC format.", None),
                p("to", str | None, "The end date in 'yyyy-mm-dd' UTC format.", None),
                page_size,
                next_page_token,
            ),
            "recordings.get": read(
                "Return all of a meeting's recordings: recording files, download_url and play_url.",
                p("meeting_id", str, "The meeting's ID or UUID."),
            ),
            "recordings.delete": write(
                "Delete all recording files of a meeting.",
                p("meeting_id", str, "The meeting's ID or UUID."),
                p("action", Literal["trash", "delete"], "trash: move to trash; delete: delete permanently.", "trash"),
                confirm=True,
            ),
            "users.list": read(
                "List users on your account.",
                p("status", Literal["active", "inactive", "pending"], "The user's status.", "active"),
                page_size,
                next_page_token,
            ),
            "users.create": write(
                "Add a new user to your Zoom account.",
                p(
                    "action",
                    Literal["create", "autoCreate", "custCreate", "ssoCreate"],
                    "The action to take.",
                    "create",
                ),
                p("email", str, "The user's email address."),
                p("first_name", str | None, "The user's first name.", None),
                p("last_name", str | None, "The user's last name.", None),
                p("type", Literal[1, 2, 4], "The user's type: 1 basic, 2 licensed, 4 unassigned.", 1),
            ),
        },
    )


# --------------------------------------------------------------------------------------
# HubSpot CRM
# --------------------------------------------------------------------------------------


def _hubspot() -> Module:
    properties = p("properties", dict[str, str], "Property values for the object, keyed by internal property name.")
    associations = p(
        "associations",
        list[dict[str, Any]] | None,
        "Records to associate the new object with, each with a type and an ID.",
        None,
    )
    search_filters = p(
        "filterGroups",
        list[dict[str, Any]],
        "Filter groups (OR'ed), each a list of filters (AND'ed) with propertyName, operator and value.",
        [],
    )
    query = p("query", str | None, "Text to search across the object's default searchable properties.", None)
    sorts = p("sorts", list[str], "Properties to sort results by, e.g. '-createdate'.", [])
    limit = p("limit", int, "The maximum number of results to display per page.", 10)
    after = p("after", str | None, "The paging cursor token of the last successfully read resource.", None)
    return _app(
        "hubspot",
        "HubSpot CRM: contacts, companies, deals, engagements and pipelines.",
        {
            "contacts.create": write("Create a contact with the given properties.", properties, associations),
            "contacts.get": read(
                "Read a contact by its ID or by a unique property such as email.",
                p("contactId", str, "The ID of the contact, or the value of idProperty."),
                p(
                    "idProperty",
                    str | None,
                    "The name of a unique property to look the contact up by, e.g. email.",
                    None,
                ),
                p("properties", list[str], "Properties to return.", []),
            ),
            "contacts.update": write(
                "Perform a partial update of a contact: only the provided property values are overwritten.",
                p("contactId", str, "The ID of the contact."),
                properties,
            ),
            "contacts.search": read(
                "Search for contacts by filtering on properties, searching through associations, and sorting.",
                search_filters,
                query,
                sorts,
                limit,
                after,
            ),
            "contacts.archive": write(
                "Archive a contact: move it to the recycling bin.",
                p("contactId", str, "The ID of the contact."),
                confirm=True,
            ),
            "contacts.merge": write(
                "Merge two contact records. The secondary contact's data is merged into the primary.",
                p("primaryObjectId", str, "The ID of the contact to keep."),
                p("objectIdToMerge", str, "The ID of the contact merged into the primary."),
                confirm=True,
            ),
            "companies.create": write("Create a company with the given properties.", properties, associations),
            "companies.search": read(
                "Search for companies by filtering on properties, searching through associations, and sorting.",
                search_filters,
                query,
                sorts,
                limit,
                after,
            ),
            "deals.create": write("Create a deal with the given properties.", properties, associations),
            "deals.update": write(
                "Perform a partial update of a deal, e.g. its dealstage, amount or closedate.",
                p("dealId", str, "The ID of the deal."),
                properties,
            ),
            "deals.list": read(
                "Read a page of deals. Control what is returned via the properties query param.",
                p("properties", list[str], "Properties to return.", []),
                p("archived", bool, "Whether to return only archived results.", False),
                limit,
                after,
            ),
            "deals.search": read(
                "Search for deals by filtering on properties, searching through associations, and sorting.",
                search_filters,
                query,
                sorts,
                limit,
                after,
            ),
            "associations.create": write(
                "Associate two CRM records, e.g. a contact with a company, with the default association type.",
                p("fromObjectType", str, "The object type of the first record, e.g. contacts."),
                p("fromObjectId", str, "The ID of the first record."),
                p("toObjectType", str, "The object type of the second record, e.g. companies."),
                p("toObjectId", str, "The ID of the second record."),
            ),
            "notes.create": write(
                "Create a note engagement and associate it with records.",
                p("hs_note_body", str, "The note's text. Supports up to 65,536 characters."),
                p("hs_timestamp", datetime, "When the note was created; determines its place on the record timeline."),
                associations,
            ),
            "calls.create": write(
                "Create a call engagement: log a call on the record timeline.",
                p("hs_call_title", str | None, "The title of the call.", None),
                p("hs_call_body", str | None, "The description and notes of the call.", None),
                p("hs_call_direction", Literal["INBOUND", "OUTBOUND"] | None, "The direction of the call.", None),
                p("hs_call_duration", int | None, "The duration of the call in milliseconds.", None),
                p("hs_timestamp", datetime, "When the call occurred."),
                associations,
            ),
            "tasks.create": write(
                "Create a task engagement: a to-do assigned to an owner, associated with records.",
                p("hs_task_subject", str, "The title of the task."),
                p("hs_task_body", str | None, "The task's notes.", None),
                p("hs_timestamp", datetime, "The task's due date."),
                p("hubspot_owner_id", str | None, "The ID of the user the task is assigned to.", None),
                p("hs_task_priority", Literal["LOW", "MEDIUM", "HIGH"] | None, "The priority of the task.", None),
                associations,
            ),
            "pipelines.list": read(
                "Return all pipelines for the specified object type, with their stages.",
                p("objectType", Literal["deals", "tickets"], "The object type, e.g. deals.", "deals"),
            ),
            "owners.list": read(
                "Get a page of owners: the users that can be assigned to CRM records.",
                p("email", str | None, "Filter by email address.", None),
                limit,
                after,
            ),
        },
    )


# --------------------------------------------------------------------------------------
# Airtable
# --------------------------------------------------------------------------------------


def _airtable() -> Module:
    base_id = p("baseId", str, "The base ID (app...).")
    table = p("tableIdOrName", str, "The table ID (tbl...) or name.")
    record_id = p("recordId", str, "The record ID (rec...).")
    return _app(
        "airtable",
        "Airtable Web API: bases, tables, fields, records and comments.",
        {
            "bases.list": read(
                "Returns the list of bases the token can access.",
                p("offset", str | None, "Pagination offset from a previous response.", None),
            ),
            "bases.get_schema": read("Returns the schema of the tables in the specified base.", base_id),
            "tables.create": write(
                "Creates a new table and returns the schema for the newly created table.",
                base_id,
                p("name", str, "The name for the table."),
                p("fields", list[dict[str, Any]], "A list of JSON objects representing the fields in the table."),
                p("description", str | None, "The description for the table.", None),
            ),
            "fields.create": write(
                "Creates a new column and returns the schema for the newly created column.",
                base_id,
                p("tableId", str, "The table ID."),
                p("name", str, "The name for the field."),
                p("type", str, "The field type, e.g. singleLineText, singleSelect, number, date."),
                p("options", dict[str, Any] | None, "Options for the field type, e.g. select choices.", None),
            ),
            "records.list": read(
                "List records in a table. Returns one page of records at a time; filter with a formula.",
                base_id,
                table,
                p("filterByFormula", str | None, "A formula used to filter records.", None),
                p("view", str | None, "The name or ID of a view; only its records are returned, in its order.", None),
                p("sort", list[dict[str, str]], "A list of sort objects: field and direction.", []),
                p("fields", list[str], "Only data for fields whose names are in this list is included.", []),
                p("maxRecords", int | None, "The maximum total number of records that will be returned.", None),
                p("offset", str | None, "Pagination offset from a previous response.", None),
            ),
            "records.get": read("Retrieve a single record.", base_id, table, record_id),
            "records.create": write(
                "Creates multiple records. Up to 10 records per request.",
                base_id,
                table,
                p("records", list[dict[str, Any]], "Records to create, each with a fields object."),
                p("typecast", bool, "Automatic data conversion from string values.", False),
            ),
            "records.update": write(
                "Updates up to 10 records, or upserts them when performUpsert is set. PATCH only updates the "
                "fields you specify.",
                base_id,
                table,
                p("records", list[dict[str, Any]], "Records to update, each with an id and a fields object."),
                p("performUpsert", dict[str, Any] | None, "Enables upsert: fieldsToMergeOn.", None),
                p("typecast", bool, "Automatic data conversion from string values.", False),
            ),
            "records.delete": write(
                "Deletes records given an array of record ids.",
                base_id,
                table,
                p("records", list[str], "The record IDs to delete (up to 10)."),
                confirm=True,
            ),
            "comments.list": read(
                "Returns a list of comments for the record from newest to oldest.",
                base_id,
                table,
                record_id,
            ),
            "comments.create": write(
                "Creates a comment on a record. User mentions are supported.",
                base_id,
                table,
                record_id,
                p("text", str, "The comment text, e.g. 'Hello @[usrL2PNC5o3H4lBEi]'."),
            ),
        },
    )


# --------------------------------------------------------------------------------------
# Postgres MCP server
# --------------------------------------------------------------------------------------


def _postgres() -> Module:
    schema = p("schema_name", str, "The schema name.", "public")
    sql = p("sql", str, "The SQL statement.")
    return _app(
        "postgres",
        "A Postgres MCP server: read-only SQL, schema inspection and performance analysis.",
        {
            "query": read("Run a read-only SQL query. Executes inside a READ ONLY transaction.", sql),
            "list_schemas": read("List all schemas in the database."),
            "list_tables": read(
                "List tables, views and sequences in a schema.",
                schema,
                p("object_type", Literal["table", "view", "sequence", "extension"], "The object type.", "table"),
            ),
            "describe_table": read(
                "Show detailed information about a table: columns, data types, constraints and indexes.",
                schema,
                p("table_name", str, "The table name."),
            ),
            "explain_query": read(
                "Explains the execution plan for a SQL query, showing how the database will execute it and its "
                "estimated cost.",
                sql,
                p("analyze", bool, "Run the query with EXPLAIN ANALYZE to get real execution statistics.", False),
            ),
            "get_top_queries": read(
                "Reports the slowest or most resource-intensive queries using pg_stat_statements.",
                p(
                    "sort_by",
                    Literal["total_time", "mean_time", "resources"],
                    "Ranking criterion.",
                    "resources",
                ),
                p("limit", int, "Number of queries to return.", 10),
            ),
            "analyze_db_health": read(
                "Analyzes database health: index health, connection utilization, buffer cache, vacuum, "
                "sequences, replication.",
                p("health_type", str, "Comma-separated health checks to run, or 'all'.", "all"),
            ),
            "recommend_indexes": read(
                "Analyze a list of SQL queries and recommend optimal indexes for them.",
                p("queries", list[str], "The SQL queries to analyze."),
            ),
        },
    )


# --------------------------------------------------------------------------------------
# Cloud: AWS S3, EC2, Lambda
# --------------------------------------------------------------------------------------


def _s3() -> Module:
    bucket = p("Bucket", str, "The bucket name.")
    key = p("Key", str, "The object key.")
    return _app(
        "s3",
        "Amazon S3: buckets and objects.",
        {
            "list_buckets": read("Returns a list of all buckets owned by the authenticated sender of the request."),
            "create_bucket": write(
                "Creates a new S3 bucket.",
                bucket,
                p("CreateBucketConfiguration", dict[str, str] | None, "The Region to create the bucket in.", None),
            ),
            "delete_bucket": write(
                "Deletes the S3 bucket. All objects in the bucket must be deleted first.",
                bucket,
                confirm=True,
            ),
            "list_objects_v2": read(
                "Returns some or all (up to 1,000) of the objects in a bucket.",
                bucket,
                p("Prefix", str | None, "Limits the response to keys that begin with the specified prefix.", None),
                p("Delimiter", str | None, "A character used to group keys, e.g. '/'.", None),
                p("MaxKeys", int, "Maximum number of keys returned.", 1000),
                p("ContinuationToken", str | None, "Continues listing from a previous truncated response.", None),
            ),
            "get_object": read(
                "Retrieves an object from Amazon S3.",
                bucket,
                key,
                p("Range", str | None, "Downloads the specified byte range of an object.", None),
                p("VersionId", str | None, "Version ID used to reference a specific version of the object.", None),
            ),
            "head_object": read(
                "Retrieves metadata from an object without returning the object itself.",
                bucket,
                key,
            ),
            "put_object": write(
                "Adds an object to a bucket.",
                bucket,
                key,
                p("Body", bytes | str, "Object data."),
                p("ContentType", str | None, "A standard MIME type describing the format of the contents.", None),
                p("StorageClass", str | None, "The storage class, e.g. STANDARD, GLACIER.", None),
            ),
            "copy_object": write(
                "Creates a copy of an object that is already stored in Amazon S3.",
                bucket,
                key,
                p("CopySource", str, "The source bucket and key, e.g. 'bucket/key'."),
            ),
            "delete_object": write(
                "Removes an object from a bucket.",
                bucket,
                key,
                p("VersionId", str | None, "Version ID used to reference a specific version of the object.", None),
                confirm=True,
            ),
            "generate_presigned_url": read(
                "Generate a presigned URL given a client, its method, and arguments: grants temporary access "
                "to an object without AWS credentials.",
                p("ClientMethod", Literal["get_object", "put_object"], "The client method to presign for."),
                p("Params", dict[str, str], "The parameters normally passed to ClientMethod, e.g. Bucket and Key."),
                p("ExpiresIn", int, "The number of seconds the presigned URL is valid for.", 3600),
            ),
        },
        namespace=("cloud",),
    )


def _ec2() -> Module:
    instance_ids = p("InstanceIds", list[str], "The IDs of the instances.")
    filters = p(
        "Filters",
        list[dict[str, Any]],
        "The filters, e.g. instance-state-name, tag:Name, vpc-id.",
        [],
    )
    group_id = p("GroupId", str, "The ID of the security group.")
    permissions = p(
        "IpPermissions",
        list[dict[str, Any]],
        "The sets of IP permissions: IpProtocol, FromPort, ToPort, IpRanges (CidrIp).",
    )
    return _app(
        "ec2",
        "Amazon EC2: instances and security groups.",
        {
            "describe_instances": read(
                "Describes the specified instances or all instances: state, type, IP addresses, tags.",
                p("InstanceIds", list[str], "The instance IDs. Default: all your instances.", []),
                filters,
                p("MaxResults", int | None, "The maximum number of items to return.", None),
                p("NextToken", str | None, "The token returned from a previous paginated request.", None),
            ),
            "describe_instance_status": read(
                "Describes the status of the specified instances or all of your instances: instance state, "
                "system and instance status checks, and scheduled events.",
                p("InstanceIds", list[str], "The instance IDs.", []),
                p("IncludeAllInstances", bool, "When true, includes the health status for all instances.", False),
            ),
            "run_instances": write(
                "Launches the specified number of instances using an AMI.",
                p("ImageId", str, "The ID of the AMI."),
                p("InstanceType", str, "The instance type, e.g. t3.micro.", "t3.micro"),
                p("MinCount", int, "The minimum number of instances to launch.", 1),
                p("MaxCount", int, "The maximum number of instances to launch.", 1),
                p("KeyName", str | None, "The name of the key pair.", None),
                p("SecurityGroupIds", list[str], "The IDs of the security groups.", []),
                p("TagSpecifications", list[dict[str, Any]], "The tags to apply to the resources.", []),
            ),
            "start_instances": write(
                "Starts an Amazon EBS-backed instance that you've previously stopped.", instance_ids
            ),
            "stop_instances": write(
                "Stops an Amazon EBS-backed instance.",
                instance_ids,
                p("Hibernate", bool, "Hibernates the instance if it is enabled for hibernation.", False),
                p("Force", bool, "Forces the instances to stop without flushing file system caches.", False),
                confirm=True,
            ),
            "reboot_instances": write(
                "Requests a reboot of the specified instances. This operation is queued.",
                instance_ids,
                confirm=True,
            ),
            "terminate_instances": write(
                "Shuts down the specified instances. Terminated instances remain visible for about an hour, "
                "then their EBS root volumes are deleted.",
                instance_ids,
                confirm=True,
            ),
            "describe_security_groups": read(
                "Describes the specified security groups or all of your security groups.",
                p("GroupIds", list[str], "The IDs of the security groups.", []),
                filters,
            ),
            "authorize_security_group_ingress": write(
                "Adds the specified inbound (ingress) rules to a security group.",
                group_id,
                permissions,
            ),
            "revoke_security_group_ingress": write(
                "Removes the specified inbound (ingress) rules from a security group.",
                group_id,
                permissions,
                confirm=True,
            ),
        },
        namespace=("cloud",),
    )


def _lambda() -> Module:
    function_name = p("FunctionName", str, "The name or ARN of the Lambda function, version, or alias.")
    return _app(
        "lambda_",
        "AWS Lambda: functions, invocation and their CloudWatch logs.",
        {
            "invoke": write(
                "Invokes a Lambda function, synchronously or asynchronously.",
                function_name,
                p(
                    "InvocationType",
                    Literal["RequestResponse", "Event", "DryRun"],
                    "RequestResponse waits for the response; Event queues it.",
                    "RequestResponse",
                ),
                p("Payload", str, "The JSON that you want to provide to your Lambda function as input.", "{}"),
                p("LogType", Literal["None", "Tail"], "Set to Tail to include the execution log.", "None"),
            ),
            "list_functions": read(
                "Returns a list of Lambda functions, with the version-specific configuration of each.",
                p("MaxItems", int, "The maximum number of functions to return.", 50),
                p("Marker", str | None, "The pagination token from a previous call.", None),
            ),
            "get_function": read(
                "Returns information about the function or function version, with a link to download the "
                "deployment package.",
                function_name,
            ),
            "update_function_configuration": write(
                "Modify the version-specific settings of a Lambda function: memory, timeout, environment "
                "variables, runtime, handler.",
                function_name,
                p("MemorySize", int | None, "The amount of memory available to the function at runtime (MB).", None),
                p("Timeout", int | None, "The amount of time (in seconds) Lambda allows a function to run.", None),
                p("Environment", dict[str, Any] | None, "Environment variables: {'Variables': {...}}.", None),
                p("Runtime", str | None, "The identifier of the function's runtime.", None),
            ),
            "update_function_code": write(
                "Updates a Lambda function's code from a .zip archive, an S3 object or a container image.",
                function_name,
                p("ZipFile", bytes | None, "The base64-encoded contents of the deployment package.", None),
                p("S3Bucket", str | None, "An S3 bucket holding the deployment package.", None),
                p("S3Key", str | None, "The S3 key of the deployment package.", None),
                p("ImageUri", str | None, "URI of a container image in the Amazon ECR registry.", None),
                p("Publish", bool, "Set to true to publish a new version of the function.", False),
            ),
            "logs.filter_log_events": read(
                "Lists log events from the function's CloudWatch Logs group (/aws/lambda/<name>), optionally "
                "filtered by a pattern and time range.",
                function_name,
                p("filterPattern", str | None, "The filter pattern to use, e.g. 'ERROR'.", None),
                p("startTime", datetime | None, "The start of the time range.", None),
                p("endTime", datetime | None, "The end of the time range.", None),
                p("limit", int, "The maximum number of events to return.", 100),
            ),
        },
        namespace=("cloud",),
    )


def heldout_catalog_b() -> list[Module]:
    """The held-out catalog, half B: ten apps modelled on their real public APIs."""
    return [
        _shopify(),
        _stripe(),
        _twilio(),
        _zoom(),
        _hubspot(),
        _airtable(),
        _postgres(),
        _s3(),
        _ec2(),
        _lambda(),
    ]


# --------------------------------------------------------------------------------------
# The labelled queries
# --------------------------------------------------------------------------------------


def _q(
    kind: Literal["lexical", "paraphrase", "hard"], text: str, alternates: tuple[str, str], *acceptable: str
) -> LabelledQuery:
    return LabelledQuery(text=text, alternates=alternates, acceptable=acceptable, kind=kind)


QUERIES_B: tuple[LabelledQuery, ...] = (
    # Shopify
    _q(
        "lexical",
        "cancel the Shopify order and restock the items",
        ("cancel order and put the items back in inventory", "shopify cancel order"),
        "shopify.orders.cancel",
    ),
    _q(
        "paraphrase",
        "mark order 1042 as shipped and add the UPS tracking number",
        ("fulfill the order with a tracking number", "create fulfillment"),
        "shopify.fulfillments.create",
    ),
    _q(
        "paraphrase",
        "we actually have 3 blue mugs left at the warehouse, correct the stock count",
        ("change the quantity on hand at a location", "update inventory quantity"),
        "shopify.inventory_levels.set",
        "shopify.inventory_levels.adjust",
    ),
    _q(
        "hard",
        "make a code SUMMER20 for 20% off everything in the store",
        ("create a percentage discount code for the shop", "create_discount"),
        "shopify.price_rules.create",
        "shopify.discount_codes.create",
    ),
    _q(
        "paraphrase",
        "what has this shopper bought from us before",
        ("customer purchase history", "list orders for customer"),
        "shopify.customers.orders.list",
    ),
    _q(
        "hard",
        "which orders are paid but still waiting to go out",
        ("orders not shipped yet", "list unfulfilled orders"),
        "shopify.orders.list",
    ),
    _q(
        "paraphrase",
        "change the price of the large size of the hoodie",
        ("set a new price for one size option of a product", "update variant price"),
        "shopify.variants.update",
    ),
    _q(
        "hard",
        "take the winter jacket off the storefront but keep it in the catalog",
        ("hide a product from the online store without deleting it", "set product status draft"),
        "shopify.products.update",
    ),
    _q(
        "hard",
        "how much would the customer get back if they return two of the three items",
        ("work out a partial refund amount for returned items", "calculate refund"),
        "shopify.refunds.calculate",
    ),
    _q(
        "paraphrase",
        "refund the returned sweater on store order #1042",
        ("give money back for one item of an order", "create order refund"),
        "shopify.refunds.create",
    ),
    _q(
        "lexical",
        "the courier gave us a new tracking number, update the tracking on the fulfillment",
        ("change the shipment's tracking number", "update_fulfillment_tracking"),
        "shopify.fulfillments.update_tracking",
    ),
    _q(
        "lexical",
        "search store customers by email",
        ("find the Shopify customer with this email address", "search_customers"),
        "shopify.customers.search",
    ),
    _q(
        "lexical",
        "look up the discount code WELCOME10",
        ("is this promo code set up in the store", "get discount code"),
        "shopify.discount_codes.lookup",
    ),
    # Stripe
    _q(
        "lexical",
        "refund a Stripe charge",
        ("return the money for a card payment", "create_refund"),
        "stripe.refunds.create",
    ),
    _q(
        "paraphrase",
        "give the customer their money back for yesterday's card payment",
        ("reverse a card payment", "refund payment intent"),
        "stripe.refunds.create",
    ),
    _q(
        "paraphrase",
        "move this customer from the basic plan to the pro plan",
        ("upgrade a customer's subscription to another price", "update_subscription"),
        "stripe.subscriptions.update",
    ),
    # subscriptions.cancel ends it now; cancelling at period end is an update (cancel_at_period_end).
    _q(
        "hard",
        "cancel subscription at the end of the billing period",
        ("stop the subscription from renewing", "cancel_subscription"),
        "stripe.subscriptions.update",
    ),
    _q(
        "hard",
        "a cardholder told their bank the charge wasn't them, send the bank our receipt and shipping proof",
        ("respond to a chargeback with evidence", "submit dispute evidence"),
        "stripe.disputes.update",
    ),
    _q(
        "hard",
        "chargebacks we've received this month",
        ("payments customers contested with their bank", "list_disputes"),
        "stripe.disputes.list",
    ),
    _q(
        "hard",
        "when does the money from our sales land in our bank account",
        ("transfers from Stripe to the bank", "list payouts"),
        "stripe.payouts.list",
    ),
    _q(
        "paraphrase",
        "how much money is available in our Stripe account right now",
        ("current funds we can pay out", "get_balance"),
        "stripe.balance.retrieve",
    ),
    _q(
        "hard",
        "collect the payment we only authorized on the card last week",
        ("charge a card hold that was placed earlier", "capture payment"),
        "stripe.payment_intents.capture",
    ),
    _q(
        "lexical",
        "void an invoice",
        ("cancel an invoice that was already sent", "void_invoice"),
        "stripe.invoices.void",
    ),
    _q(
        "hard",
        "how much will Acme be charged at their next renewal",
        ("preview the next bill for a subscription", "upcoming invoice"),
        "stripe.invoices.upcoming",
    ),
    _q(
        "paraphrase",
        "send me a link the client can pay through",
        ("shareable checkout page for a product", "create_payment_link"),
        "stripe.payment_links.create",
    ),
    _q(
        "lexical",
        "finalize the draft invoice",
        ("make the draft invoice final so it can be paid", "finalize_invoice"),
        "stripe.invoices.finalize",
    ),
    _q(
        "hard",
        "release the hold on the card for the cancelled booking",
        ("drop an uncaptured card authorization", "cancel payment intent"),
        "stripe.payment_intents.cancel",
    ),
    _q(
        "paraphrase",
        "start billing this customer every month for the Pro price",
        ("put a customer on a recurring plan", "create_subscription"),
        "stripe.subscriptions.create",
    ),
    # Twilio
    _q(
        "lexical",
        "send an SMS to +15551234567",
        ("text a phone number", "send_sms"),
        "twilio.messages.create",
    ),
    _q(
        "paraphrase",
        "text the customer that their table is ready",
        ("send a short notification to someone's phone", "send message"),
        "twilio.messages.create",
    ),
    _q(
        "hard",
        "make sure the phone number someone signs up with is really theirs",
        ("send a one-time passcode to a phone", "start verification"),
        "twilio.verify.verifications.create",
    ),
    _q(
        "paraphrase",
        "check the 6-digit code the user typed in",
        ("confirm the one-time passcode is right", "verify_code"),
        "twilio.verify.verification_checks.create",
    ),
    _q(
        "hard",
        "is this number a mobile or a landline",
        ("which carrier and line type a phone number has", "lookup phone number"),
        "twilio.lookups.phone_numbers.fetch",
    ),
    _q(
        "paraphrase",
        "get us a new phone number with a 415 area code",
        ("buy a local number in San Francisco", "purchase_phone_number"),
        "twilio.available_phone_numbers.list",
        "twilio.incoming_phone_numbers.create",
    ),
    _q(
        "hard",
        "hang up the call that's stuck",
        ("end a phone call that is still in progress", "end_call"),
        "twilio.calls.update",
    ),
    _q(
        "hard",
        "stop paying for the old support line number",
        ("give back a phone number we no longer use", "release_phone_number"),
        "twilio.incoming_phone_numbers.delete",
    ),
    _q(
        "lexical",
        "did the text message get delivered, check its status",
        ("delivery status of an SMS", "get_message"),
        "twilio.messages.fetch",
        "twilio.messages.list",
    ),
    _q(
        "lexical",
        "list call recordings",
        ("audio of phone calls we recorded", "get_call_recordings"),
        "twilio.recordings.list",
    ),
    # Zoom
    _q(
        "lexical",
        "create a Zoom meeting for Tuesday at 3pm",
        ("schedule a zoom call", "create_meeting"),
        "zoom.meetings.create",
    ),
    _q(
        "paraphrase",
        "set up a video call with the design team tomorrow morning",
        ("book a video conference", "schedule meeting"),
        "zoom.meetings.create",
    ),
    _q(
        "paraphrase",
        "who joined yesterday's all-hands",
        ("attendees of a meeting that already happened", "get_meeting_participants"),
        "zoom.past_meetings.participants.list",
    ),
    _q(
        "hard",
        "get the join details to paste into an email",
        ("meeting link, passcode and dial-in numbers as text", "get meeting invite"),
        "zoom.meetings.invitation.get",
        "zoom.meetings.get",
    ),
    _q(
        "lexical",
        "download the cloud recording of the meeting",
        ("get the video of a recorded zoom call", "get_recording"),
        "zoom.recordings.get",
        "zoom.recordings.list",
    ),
    _q(
        "hard",
        "kick everyone out, the meeting is over",
        ("end a live meeting for all participants", "end_meeting"),
        "zoom.meetings.status.update",
    ),
    _q(
        "paraphrase",
        "push the standup back an hour",
        ("reschedule a meeting to a later time", "update_meeting"),
        "zoom.meetings.update",
    ),
    _q(
        "paraphrase",
        "sign up a guest for our product launch webinar",
        ("register someone for a webinar", "add_webinar_registrant"),
        "zoom.webinars.registrants.add",
    ),
    _q(
        "paraphrase",
        "give the new hire a Zoom account",
        ("add a user to our zoom organisation", "create_user"),
        "zoom.users.create",
    ),
    # HubSpot
    _q(
        "lexical",
        "create a contact in HubSpot",
        ("add a new person to the CRM", "create_contact"),
        "hubspot.contacts.create",
    ),
    _q(
        "paraphrase",
        "move the Acme deal to closed won",
        ("we won the Acme opportunity, mark it", "update deal stage"),
        "hubspot.deals.update",
    ),
    _q(
        "hard",
        "what stages does our sales process have",
        ("steps of the deal board", "get_pipelines"),
        "hubspot.pipelines.list",
    ),
    _q(
        "paraphrase",
        "log that I spoke with Maria on the phone about pricing",
        ("record a phone conversation on the contact's timeline", "log_call activity"),
        "hubspot.calls.create",
        "hubspot.notes.create",
    ),
    _q(
        "hard",
        "the same person shows up twice in the CRM",
        ("combine duplicate contact records", "merge contacts"),
        "hubspot.contacts.merge",
    ),
    _q(
        "paraphrase",
        "link this contact to their company",
        ("connect a person record to an organisation record", "associate_contact_company"),
        "hubspot.associations.create",
    ),
    _q(
        "lexical",
        "search deals closing this quarter",
        ("opportunities with a close date before the end of March", "search_deals"),
        "hubspot.deals.search",
    ),
    _q(
        "hard",
        "remind me to follow up with the lead on Friday",
        ("add a follow-up to-do on a CRM contact", "create_task"),
        "hubspot.tasks.create",
    ),
    _q(
        "lexical",
        "search companies in the software industry",
        ("find organisations in the CRM by industry", "search_companies"),
        "hubspot.companies.search",
    ),
    _q(
        "hard",
        "which sales reps can I assign this record to",
        ("users in the CRM who can own a deal", "list_owners"),
        "hubspot.owners.list",
    ),
    # Airtable
    _q(
        "lexical",
        "list records in an Airtable table filtered by a formula",
        ("rows of the table matching a condition", "list_records"),
        "airtable.records.list",
    ),
    _q(
        "paraphrase",
        "add a row to the inventory base",
        ("put a new entry in the Airtable sheet", "create_record"),
        "airtable.records.create",
    ),
    _q(
        "hard",
        "what columns does the Projects table have",
        ("field names and types of an Airtable table", "get_table_schema"),
        "airtable.bases.get_schema",
    ),
    _q(
        "lexical",
        "leave a comment on the record for Sam",
        ("write a note on an Airtable row mentioning Sam", "create_comment"),
        "airtable.comments.create",
    ),
    _q(
        "paraphrase",
        "add a Priority column to the Tasks table",
        ("new single select field in an Airtable table", "create_field"),
        "airtable.fields.create",
    ),
    _q(
        "paraphrase",
        "mark record rec123 as Done",
        ("set the status cell of an Airtable row", "update_record"),
        "airtable.records.update",
    ),
    # Postgres
    _q(
        "lexical",
        "run a SQL query against the database",
        ("execute a read-only select", "execute_sql"),
        "postgres.query",
    ),
    _q(
        "paraphrase",
        "how many users signed up last week according to the database",
        ("count new rows in the users table since Monday", "run sql select count"),
        "postgres.query",
    ),
    _q(
        "hard",
        "why is this query so slow",
        ("show how Postgres will execute this statement", "explain analyze"),
        "postgres.explain_query",
        "postgres.recommend_indexes",
    ),
    _q(
        "lexical",
        "describe the orders table columns and indexes",
        ("structure of a table: its columns and types", "get_table_details"),
        "postgres.describe_table",
    ),
    _q(
        "paraphrase",
        "what tables are in the database",
        ("show every table in the public schema", "show tables"),
        "postgres.list_tables",
    ),
    _q(
        "hard",
        "which queries are hogging the database",
        ("most expensive statements by total time", "pg_stat_statements top queries"),
        "postgres.get_top_queries",
    ),
    # Cloud: S3
    _q(
        "lexical",
        "generate a presigned URL for an S3 object",
        ("temporary download link for a file in S3", "presign get_object"),
        "cloud.s3.generate_presigned_url",
    ),
    _q(
        "hard",
        "give the contractor a link to the file that stops working after an hour",
        ("expiring share link for a stored file", "s3 signed url"),
        "cloud.s3.generate_presigned_url",
    ),
    _q(
        "paraphrase",
        "upload the report to the bucket",
        ("save a file into S3", "s3 put object"),
        "cloud.s3.put_object",
    ),
    _q(
        "paraphrase",
        "what files are in the backups bucket under 2024/",
        ("keys in S3 starting with a prefix", "s3 list objects"),
        "cloud.s3.list_objects_v2",
    ),
    _q(
        "hard",
        "how big is this file in S3, without downloading it",
        ("size and content type of an object", "s3 object metadata"),
        "cloud.s3.head_object",
    ),
    # Cloud: EC2
    _q(
        "lexical",
        "stop the EC2 instance",
        ("shut down the server on AWS", "ec2 stop instance"),
        "cloud.ec2.stop_instances",
    ),
    _q(
        "paraphrase",
        "turn the staging server back on",
        ("power up a stopped virtual machine", "start ec2 instance"),
        "cloud.ec2.start_instances",
    ),
    _q(
        "hard",
        "open port 443 to the world on the web server",
        ("allow inbound HTTPS traffic in the firewall", "add security group rule"),
        "cloud.ec2.authorize_security_group_ingress",
    ),
    _q(
        "paraphrase",
        "show me all our running servers",
        ("which virtual machines are up right now", "list ec2 instances"),
        "cloud.ec2.describe_instances",
        "cloud.ec2.describe_instance_status",
    ),
    _q(
        "paraphrase",
        "restart the frozen VM",
        ("the server hangs, power cycle it", "reboot ec2 instance"),
        "cloud.ec2.reboot_instances",
    ),
    _q(
        "hard",
        "get rid of the old build box for good",
        ("permanently delete a virtual machine", "terminate ec2 instance"),
        "cloud.ec2.terminate_instances",
    ),
    # Cloud: Lambda
    _q(
        "lexical",
        "invoke the Lambda function",
        ("call the serverless function with a payload", "lambda invoke"),
        "cloud.lambda_.invoke",
    ),
    _q(
        "hard",
        "why did the resize-image function fail last night",
        ("errors from the serverless function's logs", "cloudwatch logs lambda"),
        "cloud.lambda_.logs.filter_log_events",
    ),
    _q(
        "paraphrase",
        "give the function more memory and a longer timeout",
        ("raise the serverless function's RAM and time limit", "update lambda config"),
        "cloud.lambda_.update_function_configuration",
    ),
    _q(
        "paraphrase",
        "deploy the new zip for the thumbnail function",
        ("ship new code to a serverless function", "lambda update code"),
        "cloud.lambda_.update_function_code",
    ),
    _q(
        "lexical",
        "list Lambda functions",
        ("which serverless functions do we have", "lambda list functions"),
        "cloud.lambda_.list_functions",
    ),
)
