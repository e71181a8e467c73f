//! The tables, declared by hand with SQL types portable to PostgreSQL and SQLite
//! (timestamps are UTC `Timestamp`, ids and JSON are `Text`).

diesel::table! {
    merchants (id) {
        id -> Text,
        name -> Text,
        api_key_hash -> Text,
        created_at -> Timestamp,
    }
}

diesel::table! {
    api_keys (id) {
        id -> Text,
        merchant_id -> Text,
        key_hash -> Text,
        mode -> Text,
        demo -> Bool,
        prefix -> Text,
        created_at -> Timestamp,
        revoked_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    idempotency_records (id) {
        id -> Text,
        merchant_id -> Text,
        idempotency_key -> Text,
        method -> Text,
        path -> Text,
        fingerprint -> Text,
        status -> Text,
        recovery_point -> Text,
        lock_token -> Text,
        locked_until -> Timestamp,
        attempts -> Integer,
        response_status -> Nullable<Integer>,
        response_body -> Nullable<Binary>,
        response_content_type -> Nullable<Text>,
        response_location -> Nullable<Text>,
        resource_id -> Nullable<Text>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        expires_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    orders (id) {
        id -> Text,
        merchant_id -> Text,
        amount -> BigInt,
        currency -> Text,
        status -> Text,
        amount_paid -> BigInt,
        amount_refunded -> BigInt,
        description -> Nullable<Text>,
        metadata -> Text,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    payments (id) {
        id -> Text,
        merchant_id -> Text,
        order_id -> Text,
        amount -> BigInt,
        currency -> Text,
        status -> Text,
        payment_method -> Text,
        failure_code -> Nullable<Text>,
        failure_message -> Nullable<Text>,
        amount_refunded -> BigInt,
        amount_reserved -> BigInt,
        processor_key -> Text,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    refunds (id) {
        id -> Text,
        merchant_id -> Text,
        payment_id -> Text,
        amount -> BigInt,
        currency -> Text,
        status -> Text,
        reason -> Nullable<Text>,
        failure_code -> Nullable<Text>,
        processor_key -> Text,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    simulator_operations (processor_key) {
        processor_key -> Text,
        kind -> Text,
        amount -> BigInt,
        currency -> Text,
        payment_method -> Text,
        status -> Text,
        decline_code -> Nullable<Text>,
        calls -> Integer,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::joinable!(api_keys -> merchants (merchant_id));

diesel::allow_tables_to_appear_in_same_query!(
    api_keys,
    merchants,
    idempotency_records,
    orders,
    payments,
    refunds
);
