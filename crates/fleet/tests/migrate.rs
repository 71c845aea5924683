//! The schema's migration against a real PostgreSQL (`TRANSCOPE_TEST_PG`; under CI
//! these tests fail rather than skip without it).

use transcope_testkit::pg;

/// Machines that first meet a fresh fleet at once (two homes' first pushes) all
/// connect: one migrates, the others wait for its advisory lock and then find the
/// schema it committed. They used to find its tables but not its version (a name
/// looked up before the wait was remembered as missing by the server's catalog
/// cache) and refused the fleet as another program's.
#[test]
fn machines_meeting_a_fresh_fleet_at_once_all_connect() {
    let Some(db) = pg::database("migrate_at_once") else {
        return;
    };
    let start = std::sync::Barrier::new(8);
    let connected: Vec<Result<(), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    transcope_fleet::Fleet::connect(db.url(), None)
                        .map(drop)
                        .map_err(|e| e.to_string())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let failed: Vec<_> = connected.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(failed.is_empty(), "{failed:#?}");
    let fleet = transcope_fleet::Fleet::connect(db.url(), None).unwrap();
    assert_eq!(
        transcope_fleet::schema::migrate(&fleet).unwrap(),
        transcope_fleet::schema::VERSION
    );
}
