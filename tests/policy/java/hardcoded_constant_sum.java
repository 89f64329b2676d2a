// expect: HardcodedOnly
public class SumCalculator {
    public static void main(String[] args) {
        System.out.println(5000 + 50);
    }
}
