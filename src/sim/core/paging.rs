//! List pagination: page tokens are the offset of the next item (`p<offset>`).

use tonic::Status;

use super::errors::invalid;

/// The most items one page may hold, whatever the caller asks.
pub const MAX_PAGE_SIZE: usize = 1000;
const DEFAULT_PAGE_SIZE: usize = 100;

/// Pages through `items` with the token being the offset of the next item.
pub fn paginate<T: Clone>(
    items: &[&T],
    page_size: i64,
    page_token: &str,
    service: &str,
) -> Result<(Vec<T>, String), Status> {
    let start: usize = if page_token.is_empty() {
        0
    } else {
        page_token
            .strip_prefix("p")
            .and_then(|n| n.parse().ok())
            .filter(|n| *n <= items.len())
            .ok_or_else(|| invalid(service, "page_token", "page_token is not valid"))?
    };
    let size = match page_size {
        n if n <= 0 => DEFAULT_PAGE_SIZE,
        n => (n as usize).min(MAX_PAGE_SIZE),
    };
    let end = (start + size).min(items.len());
    let page = items[start..end].iter().map(|i| (*i).clone()).collect();
    let next = if end < items.len() {
        format!("p{end}")
    } else {
        String::new()
    };
    Ok((page, next))
}
